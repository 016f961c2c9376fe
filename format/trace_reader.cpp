// SPDX-License-Identifier: Apache-2.0
#include "format/trace_reader.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <stdexcept>
#include <type_traits>
#include <utility>
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
  // A checkpoint's records too: a free at the checkpoint's nanosecond came after it was taken.
  if constexpr (is_definition<R>() || std::is_same_v<R, CheckpointRecord> ||
                std::is_same_v<R, CarriedRecord> || std::is_same_v<R, CarriedBlockRecord> ||
                std::is_same_v<R, CarriedVmmRecord> || std::is_same_v<R, CarriedPhaseRecord>) {
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

// A writer's head in the merge, as one integer: its time, then its tie rank, so that one
// comparison orders two heads; ties between writers go to the lower writer index (see
// State::replay()). Times from kLatest on count as kLatest.
constexpr uint64_t kLatest = (uint64_t{1} << 62) - 2;
constexpr uint64_t head_key(uint64_t time, uint8_t rank) {
  return std::min(time, kLatest) << 2 | rank;
}
// The key of a writer with no record left: after every real head's, and one below the largest
// value (replay() adds one to a key).
constexpr uint64_t kNoHead = UINT64_MAX - 1;
static_assert(head_key(UINT64_MAX, 3) < kNoHead);
constexpr std::size_t kLaneEvents = TraceReader::kBatchEvents;
static_assert(kTieRanks[static_cast<std::size_t>(RecordType::kFree)] == 1 &&
              kTieRanks[static_cast<std::size_t>(RecordType::kAlloc)] == 2);

// One writer's chunks, read in sequence: its next allocations and frees decoded ahead into a
// lane, then the record after them when it is of another type (`pending`). Lanes come in two
// buffers, filled in turn, so that the events a batch names stay where they are while their
// writer's next lane is decoded (a batch takes at most one lane's worth: one refill per writer).
struct Cursor {
  std::vector<ChunkRef> chunks;
  std::size_t next_chunk = 0;
  std::optional<RecordDecoder> decoder;
  std::array<std::vector<MemoryEvent>, 2> lanes{std::vector<MemoryEvent>(kLaneEvents),
                                                std::vector<MemoryEvent>(kLaneEvents)};
  int lane = 0;  // the buffer being given
  Record slot;   // the pending record, or one decoded by the checked path
  const Record* pending = nullptr;
  uint64_t pending_key = kNoHead;
};

}  // namespace

struct TraceReader::State {
  std::span<const uint8_t> file;
  std::vector<Cursor> cursors;
  // By writer: the events of its lane not given yet. Apart from the cursors, small: the merge
  // reads them for every record.
  struct LaneRange {
    const MemoryEvent* next = nullptr;
    const MemoryEvent* end = nullptr;
  };
  std::vector<LaneRange> ranges;
  std::vector<ReadProblem> problems;
  uint64_t unknown_skipped = 0;
  std::size_t chunks = 0;
  uint64_t expected_records = 0;

  // The merge: a tournament (loser) tree over the writers. Each inner node keeps the writer
  // that lost the match played there, with its key; the root's winner has the earliest head.
  // After the winner moves on, only the matches on its path are replayed: log2(writers)
  // comparisons per record, where a binary heap's pop and push make twice as many and move
  // entries.
  std::vector<uint32_t> losers;      // by node, 1 .. leaves - 1
  std::vector<uint64_t> loser_keys;  // by node
  uint32_t winner = 0;
  uint64_t winner_key = kNoHead;
  std::size_t leaves = 1;               // a power of two: writers and unused leaves (never winners)
  uint32_t pending_given = UINT32_MAX;  // the writer whose pending record the last batch gave
  uint64_t key_of(std::size_t writer) const;
  uint32_t play(std::size_t node, uint64_t& key);
  void build_tree();
  void replay(uint32_t& writer, uint64_t& key);
  Batch next_batch(std::span<const MemoryEvent*> out);

  // next_record()'s batch, and the record it gave last when that was an event.
  std::array<const MemoryEvent*, kBatchEvents> given{};
  std::size_t given_pos = 0;
  Batch given_batch;
  Record record_out;

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
  // The whole chunks missing at the file's end (format 4.9): `chunks_end` is where the writer's
  // chunks end, as its header says.
  void check_tail(uint64_t chunks_end);

  // A bounded trace's window (TraceReader::window()): set when history was dropped.
  HistoryWindow window;
  bool windowed = false;    // records before window.kept_from_ns are left out
  bool past_start = false;  // an event at or after kept_from_ns was given: no more to leave out
  Record converted;         // a Carried record given as an allocation
  Batch next_batch_in_window(std::span<const MemoryEvent*> out);
  const Record* in_window(const Record* other);
  void refill(std::size_t writer);
  bool open_next_chunk(Cursor& c);
  void end_chunk(Cursor& c);
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

void TraceReader::State::check_tail(uint64_t chunks_end) {
  const uint64_t size = file.size();
  if (chunks_end <= size) return;
  // A chunk the file ends inside is named by scan(); the missing ones begin at the next boundary.
  uint64_t missing_from = kFirstChunkOffset;
  if (size > kFirstChunkOffset)
    missing_from += (size - kFirstChunkOffset + chunk_size - 1) / chunk_size * chunk_size;
  if (missing_from >= chunks_end) return;
  const uint64_t missing = (chunks_end - missing_from + chunk_size - 1) / chunk_size;
  add_problem({ReadProblem::Kind::kTruncated, missing_from,
               "the file ends at byte " + std::to_string(size) + " but its chunks run to byte " +
                   std::to_string(chunks_end) + ": " + std::to_string(missing) + " whole chunk" +
                   (missing == 1 ? " is" : "s are") + " missing, their records lost"});
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
  ranges.resize(cursors.size());
  for (std::size_t i = 0; i < cursors.size(); ++i) refill(i);
  build_tree();
}

// The key of the writer's head: its lane's next event, else its pending record, else none.
uint64_t TraceReader::State::key_of(std::size_t writer) const {
  const LaneRange& r = ranges[writer];
  if (r.next != r.end) [[likely]]
    return head_key(r.next->record.time_ns, r.next->type == RecordType::kFree ? 1 : 2);
  return cursors[writer].pending_key;
}

// The winner of the subtree under `node`, and its key in `key`, recording each match's loser on
// the way. A tie goes to the left (the lower writer indexes).
uint32_t TraceReader::State::play(std::size_t node, uint64_t& key) {
  if (node >= leaves) {
    const std::size_t writer = node - leaves;
    key = writer < cursors.size() ? key_of(writer) : kNoHead;
    return static_cast<uint32_t>(writer);
  }
  uint64_t left_key = 0;
  uint64_t right_key = 0;
  const uint32_t left = play(2 * node, left_key);
  const uint32_t right = play(2 * node + 1, right_key);
  const bool left_wins = left_key <= right_key;
  losers[node] = left_wins ? right : left;
  loser_keys[node] = left_wins ? right_key : left_key;
  key = left_wins ? left_key : right_key;
  return left_wins ? left : right;
}

void TraceReader::State::build_tree() {
  leaves = 1;
  while (leaves < cursors.size()) leaves *= 2;
  losers.assign(leaves, 0);
  loser_keys.assign(leaves, kNoHead);
  winner = play(1, winner_key);
}

// Replays the matches on the path of `writer`, whose head's key is now `key`: the new winner and
// its key come back in them. At each node the candidate comes from the subtree that holds
// `writer`, and the loser kept there from the other one (the winner before came up this path),
// so a tie goes to the candidate when it comes from the left: the loser takes its place when its
// key is below the candidate's, or equal to it from the right (below the candidate's plus one;
// no key is the largest value).
[[gnu::always_inline]] inline void TraceReader::State::replay(uint32_t& writer, uint64_t& key) {
  uint32_t* const node_writers = losers.data();
  uint64_t* const node_keys = loser_keys.data();
  std::size_t child = leaves + writer;
  for (std::size_t node = child / 2; node >= 1; child = node, node /= 2) {
    // Swapped by masks: a conditional swap compiles to a branch, mispredicted half the time.
    const uint64_t other = node_keys[node];
    const uint32_t other_writer = node_writers[node];
    const uint64_t mask = 0 - static_cast<uint64_t>(other < key + (child & 1));
    const uint64_t key_diff = (other ^ key) & mask;
    const uint32_t writer_diff = (other_writer ^ writer) & static_cast<uint32_t>(mask);
    node_keys[node] = other ^ key_diff;
    node_writers[node] = other_writer ^ writer_diff;
    key ^= key_diff;
    writer ^= writer_diff;
  }
  winner = writer;
  winner_key = key;
}

// The writer's next chunk whose checksum is right, opened for decoding; false when none is left.
bool TraceReader::State::open_next_chunk(Cursor& c) {
  while (c.next_chunk < c.chunks.size()) {
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
    return true;
  }
  return false;
}

// The chunk being decoded has given its last record.
void TraceReader::State::end_chunk(Cursor& c) {
  const StreamStatus& status = c.decoder->status();
  unknown_skipped += c.decoder->unknown_records_skipped();
  if (status.end != StreamEnd::kClean) {
    // A chunk whose checksum is right but whose records are not: a writer bug, not damage.
    add_problem({ReadProblem::Kind::kCorrupt, status.offset, status.reason});
  }
  c.decoder.reset();
  if (pages.release) chunk_done(c.chunks[c.next_chunk - 1].offset);
}

// Decodes the writer's next allocations and frees into its other lane, up to the first record
// of another type (its pending record) or the end of its chunks.
void TraceReader::State::refill(std::size_t writer) {
  Cursor& c = cursors[writer];
  c.lane ^= 1;
  MemoryEvent* const events = c.lanes[c.lane].data();
  std::size_t n = 0;
  c.pending = nullptr;
  c.pending_key = kNoHead;
  while (n < kLaneEvents) {
    if (c.decoder) [[likely]] {
      n += c.decoder->next_memory_events(events + n, kLaneEvents - n);
      if (n == kLaneEvents) break;
      // Another type, the end of the chunk, or a record the fast path leaves to the checks.
      if (c.decoder->next_into_checked(c.slot)) {
        if (as_memory_event(c.slot, events[n])) {
          ++n;
          continue;
        }
        c.pending = &c.slot;
        c.pending_key = head_key(c.decoder->last_time(),
                                 kTieRanks[static_cast<std::size_t>(c.decoder->last_type())]);
        break;
      }
      end_chunk(c);
    }
    if (!open_next_chunk(c)) break;
  }
  ranges[writer] = {events, events + n};
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

namespace {

// What a pass over a bounded trace's records finds of its checkpoints.
struct CheckpointSeen {
  uint64_t time_ns = 0;
  bool begun = false;
  std::optional<uint64_t> items;  // from its end
  uint64_t carried = 0;  // Carried, CarriedBlock, CarriedVmm, CarriedPhase: what `items` counts
  uint64_t carried_allocations = 0;
  uint64_t carried_blocks = 0;
  uint64_t carried_bytes = 0;
  uint64_t events_before = 0;  // events (neither definitions nor checkpoints) before its begin
};

bool counts_as_carried_bytes(MemoryKind kind) {
  return kind != MemoryKind::kVmmReservation;
}

}  // namespace

// The oldest whole checkpoint from the header's valid_from on: every record after its time is in
// the file (format/README.md). One pass over every record, before the first is given: a bounded
// trace is at most its limit.
static HistoryWindow find_window(std::span<const uint8_t> file, const FileHeader& header,
                                 uint64_t& expected_records) {
  FileHeader raw_header = header;
  raw_header.valid_from = 0;
  TraceReader raw(file, raw_header);
  std::map<uint32_t, CheckpointSeen> seen;
  uint64_t events = 0;
  uint64_t total = 0;
  uint64_t checkpoint_records = 0;
  while (const Record* record = raw.next_record()) {
    ++total;
    if (const auto* c = std::get_if<CheckpointRecord>(record)) {
      ++checkpoint_records;
      CheckpointSeen& s = seen[c->id];
      if (c->action == static_cast<uint32_t>(CheckpointAction::kBegin)) {
        s.begun = true;
        s.time_ns = c->time_ns;
        s.events_before = events;
      } else {
        s.items = c->items;
      }
    } else if (const auto* c = std::get_if<CarriedRecord>(record)) {
      ++checkpoint_records;
      CheckpointSeen& s = seen[c->checkpoint];
      ++s.carried;
      ++s.carried_allocations;
      if (counts_as_carried_bytes(c->kind)) s.carried_bytes += c->size;
    } else if (const auto* c = std::get_if<CarriedBlockRecord>(record)) {
      ++checkpoint_records;
      CheckpointSeen& s = seen[c->checkpoint];
      ++s.carried;
      ++s.carried_blocks;
    } else if (const auto* c = std::get_if<CarriedVmmRecord>(record)) {
      ++checkpoint_records;
      ++seen[c->checkpoint].carried;
    } else if (const auto* c = std::get_if<CarriedPhaseRecord>(record)) {
      ++checkpoint_records;
      ++seen[c->checkpoint].carried;
    } else if (!std::visit([](const auto& r) { return is_definition<std::decay_t<decltype(r)>>(); },
                           *record) &&
               !std::holds_alternative<NoteRecord>(*record)) {
      ++events;
    }
  }
  HistoryWindow window;
  window.max_size = header.max_size;
  window.written_bytes = header.chunks_end != 0 ? header.chunks_end : file.size();
  for (const auto& [id, s] : seen) {
    if (id < header.valid_from || !s.begun || !s.items || *s.items != s.carried) continue;
    window.dropped = true;
    window.checkpoint = id;
    window.kept_from_ns = s.time_ns;
    window.dropped_records = header.dropped_records + s.events_before;
    window.carried_allocations = s.carried_allocations;
    window.carried_blocks = s.carried_blocks;
    window.carried_bytes = s.carried_bytes;
    expected_records = total - checkpoint_records + s.carried - s.events_before;
    return window;
  }
  window.problem = "history was dropped but no whole checkpoint from checkpoint " +
                   std::to_string(header.valid_from) +
                   " on is left to rebuild it from: the records kept are given as they are";
  return window;
}

TraceReader::TraceReader(std::span<const uint8_t> file, const FileHeader& header, PageAccess pages)
    : state_(std::make_unique<State>()) {
  state_->file = file;
  state_->pages = std::move(pages);
  state_->checksum = chunk_checksum(header.major);
  state_->counted = chunks_count_records(header);
  state_->window.max_size = header.max_size;
  state_->window.written_bytes = header.chunks_end != 0 ? header.chunks_end : file.size();
  state_->chunk_size = header.chunk_size;
  state_->check_tail(header.chunks_end);
  if (header.max_size != 0 && header.valid_from != 0) {
    uint64_t expected = 0;
    state_->window = find_window(file, header, expected);
    if (state_->window.dropped) {
      state_->windowed = true;
      state_->scan(header.chunk_size);
      state_->expected_records = expected;
      return;
    }
  }
  state_->scan(header.chunk_size);
}

const HistoryWindow& TraceReader::window() const {
  return state_->window;
}

// A record other than an allocation or a free, as the window gives it: definitions and notes
// whatever their time; the chosen checkpoint's Carried records as allocations, its CarriedBlock
// records as block events, its CarriedVmm records as maps, retains and releases and its
// CarriedPhase records as the phases they opened, all at its time; nothing else of the
// checkpoints; and the rest from the window's start on.
const Record* TraceReader::State::in_window(const Record* other) {
  if (other == nullptr) return nullptr;
  if (std::holds_alternative<CheckpointRecord>(*other)) return nullptr;
  if (const auto* c = std::get_if<CarriedRecord>(other)) {
    if (c->checkpoint != window.checkpoint) return nullptr;
    window.carried.push_back({c->alloc_time_ns, c->size, c->device, c->stack, 0, false});
    AllocRecord& a = converted.emplace<AllocRecord>();
    a.time_ns = window.kept_from_ns;
    a.thread = c->thread;
    a.device = c->device;
    a.kind = c->kind;
    a.api = c->api;
    a.public_api = c->public_api;
    a.address = c->address;
    a.size = c->size;
    a.context = c->context;
    a.stack = c->stack;
    return &converted;
  }
  if (const auto* c = std::get_if<CarriedBlockRecord>(other)) {
    if (c->checkpoint != window.checkpoint) return nullptr;
    if (c->action == static_cast<uint32_t>(BlockAction::kAlloc)) {
      window.carried.push_back(
          {c->block_time_ns, c->size, c->device, c->stack, c->allocator, true});
    }
    BlockRecord& b = converted.emplace<BlockRecord>();
    b.time_ns = window.kept_from_ns;
    b.thread = c->thread;
    b.allocator = c->allocator;
    b.action = c->action;
    b.device = c->device;
    b.address = c->address;
    b.size = c->size;
    b.stream = c->stream;
    b.stack = c->stack;
    return &converted;
  }
  if (const auto* c = std::get_if<CarriedVmmRecord>(other)) {
    if (c->checkpoint != window.checkpoint) return nullptr;
    switch (static_cast<CarriedVmmAction>(c->action)) {
      case CarriedVmmAction::kMap: {
        MapRecord& m = converted.emplace<MapRecord>();
        m.time_ns = window.kept_from_ns;
        m.device = c->device;
        m.address = c->address;
        m.size = c->size;
        m.offset = c->offset;
        m.handle = c->handle;
        return &converted;
      }
      case CarriedVmmAction::kRetain: {
        RetainHandleRecord& h = converted.emplace<RetainHandleRecord>();
        h.time_ns = window.kept_from_ns;
        h.handle = c->handle;
        return &converted;
      }
      case CarriedVmmAction::kRelease: {
        FreeRecord& f = converted.emplace<FreeRecord>();
        f.time_ns = window.kept_from_ns;
        f.api = Api::kCuMemRelease;
        f.address = c->handle;
        return &converted;
      }
    }
    return nullptr;  // an action this build does not know
  }
  if (const auto* c = std::get_if<CarriedPhaseRecord>(other)) {
    if (c->checkpoint != window.checkpoint) return nullptr;
    PhaseRecord& p = converted.emplace<PhaseRecord>();
    p.time_ns = window.kept_from_ns;
    p.tid = c->tid;
    p.action = c->action;
    p.domain = c->domain;
    p.name = c->name;
    p.range = c->range;
    return &converted;
  }
  const bool timeless =
      std::holds_alternative<NoteRecord>(*other) ||
      std::visit([](const auto& r) { return is_definition<std::decay_t<decltype(r)>>(); }, *other);
  if (timeless || record_time(*other) >= window.kept_from_ns) return other;
  return nullptr;
}

TraceReader::Batch TraceReader::State::next_batch_in_window(std::span<const MemoryEvent*> out) {
  while (true) {
    Batch batch = next_batch(out);
    if (batch.events == 0 && batch.other == nullptr) return batch;  // the end
    std::size_t kept = batch.events;
    if (!past_start) {
      kept = 0;
      for (std::size_t i = 0; i < batch.events; ++i) {
        if (out[i]->record.time_ns >= window.kept_from_ns) out[kept++] = out[i];
      }
      // The merge gives records in time order: from the first event kept on, all are.
      past_start = kept > 0;
    }
    const Record* other = in_window(batch.other);
    if (kept > 0 || other != nullptr) return {kept, other};
  }
}

TraceReader::~TraceReader() = default;

TraceReader::Batch TraceReader::next_batch(std::span<const MemoryEvent*> out) {
  // With no room, no events and no record would read as the end.
  if (out.empty()) throw std::invalid_argument("TraceReader::next_batch: no room for an event");
  if (state_->windowed) [[unlikely]]
    return state_->next_batch_in_window(out);
  return state_->next_batch(out);
}

TraceReader::Batch TraceReader::State::next_batch(std::span<const MemoryEvent*> out) {
  uint32_t writer = winner;
  uint64_t key = winner_key;
  if (pending_given != UINT32_MAX) {
    // The winner's pending record was given last time: its next events come after it.
    pending_given = UINT32_MAX;
    refill(writer);
    key = key_of(writer);
    replay(writer, key);
  }
  const std::size_t most = std::min(out.size(), kBatchEvents);
  const std::size_t writers = cursors.size();
  std::size_t n = 0;
  while (n < most && writer < writers) {
    LaneRange& r = ranges[writer];
    if (r.next == r.end) [[unlikely]] {
      const Cursor& c = cursors[writer];
      if (c.pending == nullptr) break;  // the earliest writer has nothing left: none has
      pending_given = writer;
      return {n, c.pending};
    }
    out[n++] = r.next++;
    if (r.next == r.end && cursors[writer].pending == nullptr) [[unlikely]]
      refill(writer);
    key = key_of(writer);
    replay(writer, key);
  }
  if (n == 0 && !done_chunks.empty()) release_done();
  return {n, nullptr};
}

const Record* TraceReader::next_record() {
  State& s = *state_;
  while (true) {
    if (s.given_pos < s.given_batch.events) {
      to_record(*s.given[s.given_pos++], s.record_out);
      return &s.record_out;
    }
    if (const Record* other = std::exchange(s.given_batch.other, nullptr)) return other;
    s.given_pos = 0;
    s.given_batch = s.windowed ? s.next_batch_in_window(s.given) : s.next_batch(s.given);
    if (s.given_batch.events == 0 && s.given_batch.other == nullptr) return nullptr;
  }
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
