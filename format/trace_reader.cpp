#include "format/trace_reader.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <type_traits>
#include <variant>

#include "format/chunk.h"
#include "format/record_decoder.h"

namespace gmt::format {
namespace {

template <class T>
T load_le(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // the format is little-endian, as are the hosts we run on
  return v;
}

struct ChunkRef {
  uint32_t sequence;
  uint64_t offset;  // of the chunk header
  uint32_t length;  // published payload bytes
  uint32_t thread;
  // The checksum of the published bytes, when the up-front pass has not checked it (it read
  // only the header): checked as the chunk is opened for decoding, while its bytes are at hand.
  std::optional<uint32_t> unchecked_crc;
};

// Records at the same nanosecond: what defines an id first, then what ends an allocation, then
// what starts one.
template <class R>
constexpr uint8_t tie_rank_of() {
  if constexpr (std::is_same_v<R, ProcessInfoRecord> || std::is_same_v<R, ContextRecord> ||
                std::is_same_v<R, StackRecord> || std::is_same_v<R, ModuleRecord> ||
                std::is_same_v<R, PythonCodeRecord> || std::is_same_v<R, ThreadRecord> ||
                std::is_same_v<R, NameRecord> || std::is_same_v<R, DeviceRecord>) {
    return 0;
  } else if constexpr (std::is_same_v<R, FreeRecord> || std::is_same_v<R, UnmapRecord> ||
                       std::is_same_v<R, ContextDestroyedRecord>) {
    return 1;
  } else {
    return 2;
  }
}

// By record type (RecordType numbers the variant's alternatives from 1): a table, so that the
// merge does not look into the variant for it.
template <std::size_t... I>
constexpr std::array<uint8_t, sizeof...(I) + 1> tie_ranks(std::index_sequence<I...>) {
  return {2, tie_rank_of<std::variant_alternative_t<I, Record>>()...};
}
constexpr auto kTieRanks = tie_ranks(std::make_index_sequence<std::variant_size_v<Record>>());

}  // namespace

uint64_t record_time(const Record& record) {
  return std::visit(
      [](const auto& r) -> uint64_t {
        if constexpr (requires { r.time_ns; }) {
          return r.time_ns;
        } else {
          return 0;
        }
      },
      record);
}

namespace {

// Where a record of each type is decoded: allocations and frees, nearly every record, each in
// a slot of their own, the rest in a third. Decoding a record into a slot that held another type
// would destroy the one there and build the other (variant::emplace), at every switch between an
// allocation and a free.
constexpr std::size_t kSlotsPerSet = 3;
std::size_t slot_for(uint8_t type) {
  return type == static_cast<uint8_t>(RecordType::kAlloc)  ? 0
         : type == static_cast<uint8_t>(RecordType::kFree) ? 1
                                                           : 2;
}

// One writer's chunks, read in sequence, one record ahead. Records are decoded into two sets of
// slots in turn, reused: the head's, and that of the record last handed out (valid until the
// next call).
struct Cursor {
  std::vector<ChunkRef> chunks;
  std::size_t next_chunk = 0;
  std::optional<RecordDecoder> decoder;
  Record slots[2][kSlotsPerSet] = {{AllocRecord{}, FreeRecord{}, Record{}},
                                   {AllocRecord{}, FreeRecord{}, Record{}}};
  int head_set = 0;
  Record* head = nullptr;  // null when the writer has no record left
};

// What the merge orders a writer's head by, kept apart from the records: its time, then its tie
// rank, then the writer's index, packed in one integer so that a comparison is one compare
// (no branch to mispredict: which writer is ahead changes from record to record).
using HeadKey = unsigned __int128;
HeadKey head_key(uint64_t time, int rank, std::size_t writer) {
  return static_cast<HeadKey>(time) << 64 | static_cast<HeadKey>(rank) << 32 | writer;
}
// The rank of a writer with no record left: after every tie rank of a real record, so that
// such a writer wins only when no writer has a head.
constexpr int kNoHead = 3;

}  // namespace

struct TraceReader::State {
  std::span<const uint8_t> file;
  std::vector<Cursor> cursors;
  std::vector<HeadKey> keys;  // by writer: its head's
  std::vector<ReadProblem> problems;
  uint64_t unknown_skipped = 0;
  std::size_t chunks = 0;
  uint64_t expected_records = 0;

  // The merge: a tournament (loser) tree over the writers. Each inner node keeps the writer
  // that lost the match played there, the root's winner has the earliest head; after the
  // winner moves on, only the matches on its path are replayed: log2(writers) comparisons per
  // record, where a binary heap's pop and push make twice as many and move entries.
  // Heads that tie in time and rank come out by writer index: the order is defined, not an
  // accident of the merge's internals.
  std::vector<uint32_t> losers;  // by node, 1 .. leaves - 1
  uint32_t winner = 0;
  uint32_t last_given = UINT32_MAX;  // the writer of the record next_record() gave last
  std::size_t leaves = 1;            // a power of two: writers and unused leaves (never winners)
  bool earlier(uint32_t a, uint32_t b) const { return keys[a] < keys[b]; }
  uint32_t play(std::size_t node);
  void build_tree();
  void replay_from(uint32_t writer);
  PageAccess pages;
  uint32_t chunk_size = 0;
  ChunkChecksum checksum = ChunkChecksum::kCrc32c;
  // The chunks' headers count their records (chunks_count_records()): the up-front pass reads
  // only the headers, and each chunk's checksum is checked when it is decoded.
  bool counted = false;
  // The header or chunk being read up front, when pages.copy reads it.
  std::vector<uint8_t> scratch;
  const uint8_t* read_chunk(uint64_t offset, std::size_t n);
  bool checksum_matches(const uint8_t* payload, uint32_t length, uint32_t crc) const;
  static std::string checksum_mismatch(uint32_t thread);
  void add_problem(ReadProblem problem);
  // Chunks read to their end, not yet released: given back in batches, as runs of adjacent
  // chunks, because one release per chunk costs more than the pages are worth.
  std::vector<uint64_t> done_chunks;
  static constexpr std::size_t kReleaseBatch = 256;  // chunks (16 MiB of 64 KiB chunks)
  void chunk_done(uint64_t offset);
  void release_done();

  void scan(uint32_t chunk_size);
  void advance(std::size_t writer);
  void advance_slowly(std::size_t writer);
  void take_head(std::size_t writer, Record* record);
  uint64_t newest_address = 0;  // TraceReader::newest_address()
};

// The `n` bytes at `offset` (n at most what the file has there): copied when the file is a
// mapping, so that this pass leaves no pages behind.
const uint8_t* TraceReader::State::read_chunk(uint64_t offset, std::size_t n) {
  if (!pages.copy) return file.data() + offset;
  scratch.resize(n);
  return pages.copy(offset, scratch.data(), n) ? scratch.data() : file.data() + offset;
}

bool TraceReader::State::checksum_matches(const uint8_t* payload, uint32_t length,
                                          uint32_t crc) const {
  return extend_checksum(checksum, 0, payload, length) == crc;
}

std::string TraceReader::State::checksum_mismatch(uint32_t thread) {
  return "checksum mismatch in a chunk of thread " + std::to_string(thread) +
         "; its records are lost";
}

// In the order of their offsets, whichever pass found them: a chunk whose checksum is checked
// only when it is decoded comes out in the merge's order, not the file's.
void TraceReader::State::add_problem(ReadProblem problem) {
  auto at =
      std::upper_bound(problems.begin(), problems.end(), problem.offset,
                       [](uint64_t offset, const ReadProblem& p) { return offset < p.offset; });
  problems.insert(at, std::move(problem));
}

void TraceReader::State::scan(uint32_t chunk_size) {
  this->chunk_size = chunk_size;
  std::map<uint32_t, std::vector<ChunkRef>> by_writer;
  const uint64_t size = file.size();
  for (uint64_t off = kFirstChunkOffset; off < size; off += chunk_size) {
    if (size - off < kChunkHeaderSize) {
      add_problem({ReadProblem::Kind::kTruncated, off, "the file ends inside a chunk header"});
      break;
    }
    const uint8_t* h =
        read_chunk(off, counted ? kChunkHeaderSize : std::min<uint64_t>(chunk_size, size - off));
    const uint32_t magic = load_le<uint32_t>(h + ChunkHeaderLayout::kMagic);
    if (magic == 0) continue;  // space reserved for a chunk that was never handed out
    if (magic != kChunkMagic) {
      add_problem({ReadProblem::Kind::kCorrupt, off,
                   "damaged chunk header (bad magic); its records are lost"});
      continue;
    }
    ++chunks;
    const uint64_t published = load_le<uint64_t>(h + ChunkHeaderLayout::kPublished);
    const uint32_t length = published_length(published);
    const uint32_t thread = load_le<uint32_t>(h + ChunkHeaderLayout::kThread);
    if (length > chunk_size - kChunkHeaderSize) {
      add_problem(
          {ReadProblem::Kind::kCorrupt, off, "damaged chunk header (length past the chunk)"});
      continue;
    }
    if (length > size - off - kChunkHeaderSize) {
      add_problem({ReadProblem::Kind::kTruncated, off,
                   "the file ends inside a chunk of thread " + std::to_string(thread) + " (" +
                       std::to_string(off + kChunkHeaderSize + length - size) +
                       " bytes missing); its records are lost"});
      continue;
    }
    ChunkRef ref{load_le<uint32_t>(h + ChunkHeaderLayout::kSequence), off, length, thread, {}};
    const uint64_t count = load_le<uint64_t>(h + ChunkHeaderLayout::kCounted);
    if (counted && counted_length(count) == length) {
      ref.unchecked_crc = published_crc(published);
      expected_records += counted_records(count);
    } else {
      // No count for these bytes: read them here, checking and counting them at once.
      if (counted) h = read_chunk(off, std::min<uint64_t>(chunk_size, size - off));
      if (!checksum_matches(h + kChunkHeaderSize, length, published_crc(published))) {
        add_problem({ReadProblem::Kind::kCorrupt, off, checksum_mismatch(thread)});
        continue;
      }
      expected_records += RecordDecoder::count_records({h + kChunkHeaderSize, length});
    }
    by_writer[load_le<uint32_t>(h + ChunkHeaderLayout::kWriter)].push_back(ref);
  }
  for (auto& [writer, list] : by_writer) {
    std::sort(list.begin(), list.end(),
              [](const ChunkRef& a, const ChunkRef& b) { return a.sequence < b.sequence; });
    Cursor cursor;
    cursor.chunks = std::move(list);
    cursors.push_back(std::move(cursor));
  }
  keys.resize(cursors.size());
  for (std::size_t i = 0; i < cursors.size(); ++i) advance(i);
  newest_address = 0;  // no record given yet
  build_tree();
}

// The winner of the subtree under `node`, recording each match's loser on the way.
uint32_t TraceReader::State::play(std::size_t node) {
  if (node >= leaves) return static_cast<uint32_t>(node - leaves);
  const uint32_t left = play(2 * node);
  const uint32_t right = play(2 * node + 1);
  const bool left_wins = earlier(left, right);
  losers[node] = left_wins ? right : left;
  return left_wins ? left : right;
}

void TraceReader::State::build_tree() {
  leaves = 1;
  while (leaves < cursors.size()) leaves *= 2;
  // Unused leaves are writers past the last one, whose heads are past every real head.
  keys.resize(leaves);
  for (std::size_t i = cursors.size(); i < leaves; ++i) keys[i] = head_key(UINT64_MAX, kNoHead, i);
  losers.assign(leaves, 0);
  winner = play(1);
}

void TraceReader::State::replay_from(uint32_t writer) {
  uint32_t candidate = writer;
  for (std::size_t node = (leaves + writer) / 2; node >= 1; node /= 2) {
    // Swapped by masks: a conditional swap compiles to a branch, mispredicted half the time.
    const uint32_t loser = losers[node];
    const uint32_t mask = 0u - static_cast<uint32_t>(earlier(loser, candidate));
    const uint32_t diff = (loser ^ candidate) & mask;
    losers[node] = loser ^ diff;
    candidate ^= diff;
  }
  winner = candidate;
}

// Loads the writer's next record into its head, moving through its chunks; at the end its key
// goes past every real head.
void TraceReader::State::advance(std::size_t writer) {
  Cursor& c = cursors[writer];
  if (c.decoder) [[likely]] {
    Record* set = c.slots[c.head_set];
    if (Record* record = c.decoder->next_event(set[0], set[1])) [[likely]] {
      take_head(writer, record);
      return;
    }
  }
  advance_slowly(writer);
}

// The record the writer's decoder gave last becomes its head.
void TraceReader::State::take_head(std::size_t writer, Record* record) {
  Cursor& c = cursors[writer];
  keys[writer] = head_key(c.decoder->last_time(),
                          kTieRanks[static_cast<std::size_t>(c.decoder->last_type())], writer);
  c.head = record;
  newest_address = c.decoder->last_address();
}

// advance() for any record, across chunks.
void TraceReader::State::advance_slowly(std::size_t writer) {
  Cursor& c = cursors[writer];
  newest_address = 0;
  c.head = nullptr;
  keys[writer] = head_key(UINT64_MAX, kNoHead, writer);
  while (true) {
    if (c.decoder) {
      Record& record = c.slots[c.head_set][slot_for(c.decoder->peek_type())];
      if (c.decoder->next_into(record)) {
        take_head(writer, &record);
        return;
      }
      const StreamStatus& status = c.decoder->status();
      unknown_skipped += c.decoder->unknown_records_skipped();
      if (status.end != StreamEnd::kClean) {
        // A chunk whose checksum is right but whose records are not: a writer bug, not damage.
        add_problem({ReadProblem::Kind::kCorrupt, status.offset, status.reason});
      }
      c.decoder.reset();
      if (pages.release) chunk_done(c.chunks[c.next_chunk - 1].offset);
    }
    if (c.next_chunk == c.chunks.size()) return;
    const ChunkRef& chunk = c.chunks[c.next_chunk++];
    const std::span<const uint8_t> payload =
        file.subspan(chunk.offset + kChunkHeaderSize, chunk.length);
    if (chunk.unchecked_crc &&
        !checksum_matches(payload.data(), chunk.length, *chunk.unchecked_crc)) {
      add_problem({ReadProblem::Kind::kCorrupt, chunk.offset, checksum_mismatch(chunk.thread)});
      if (pages.release) chunk_done(chunk.offset);
      continue;
    }
    c.decoder.emplace(payload, chunk.offset + kChunkHeaderSize, chunk.thread);
  }
}

void TraceReader::State::chunk_done(uint64_t offset) {
  done_chunks.push_back(offset);
  if (done_chunks.size() >= kReleaseBatch) release_done();
}

void TraceReader::State::release_done() {
  std::sort(done_chunks.begin(), done_chunks.end());
  for (std::size_t i = 0; i < done_chunks.size();) {
    std::size_t j = i + 1;
    while (j < done_chunks.size() && done_chunks[j] == done_chunks[j - 1] + chunk_size) ++j;
    const uint64_t end = std::min<uint64_t>(done_chunks[j - 1] + chunk_size, file.size());
    pages.release(done_chunks[i], end - done_chunks[i]);
    i = j;
  }
  done_chunks.clear();
}

TraceReader::TraceReader(std::span<const uint8_t> file, const FileHeader& header, PageAccess pages)
    : state_(std::make_unique<State>()), newest_address_(&state_->newest_address) {
  state_->file = file;
  state_->pages = std::move(pages);
  state_->checksum = chunk_checksum(header.major);
  state_->counted = chunks_count_records(header);
  state_->scan(header.chunk_size);
}

TraceReader::~TraceReader() = default;

const Record* TraceReader::next_record() {
  const uint32_t writer = state_->winner;
  if (writer >= state_->cursors.size() || state_->cursors[writer].head == nullptr) {
    if (!state_->done_chunks.empty()) state_->release_done();
    return nullptr;
  }
  Cursor& c = state_->cursors[writer];
  const Record* record = c.head;
  c.head_set ^= 1;  // the next head goes to the other set
  state_->last_given = writer;
  state_->advance(writer);
  state_->replay_from(writer);
  return record;
}

const Record* TraceReader::newest() const {
  const uint32_t writer = state_->last_given;
  return writer < state_->cursors.size() ? state_->cursors[writer].head : nullptr;
}

std::optional<Record> TraceReader::next() {
  const Record* record = next_record();
  if (record == nullptr) return std::nullopt;
  return *record;
}

uint64_t TraceReader::expected_records() const {
  return state_->expected_records;
}

const std::vector<ReadProblem>& TraceReader::problems() const {
  return state_->problems;
}
uint64_t TraceReader::unknown_records_skipped() const {
  return state_->unknown_skipped;
}
std::size_t TraceReader::chunk_count() const {
  return state_->chunks;
}

}  // namespace gmt::format
