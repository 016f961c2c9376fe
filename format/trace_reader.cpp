#include "format/trace_reader.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <queue>
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
};

// Records at the same nanosecond: what defines an id first, then what ends an allocation, then
// what starts one.
template <class R>
constexpr int tie_rank_of() {
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

// One writer's chunks, read in sequence, one record ahead. Records are decoded into two slots
// in turn, reused: the head, and the record last handed out (valid until the next call).
struct Cursor {
  std::vector<ChunkRef> chunks;
  std::size_t next_chunk = 0;
  std::optional<RecordDecoder> decoder;
  Record slots[2];
  int head_slot = 0;
  bool has_head = false;
};

// What the merge orders a writer's head by, kept apart from the records: each comparison reads
// two integers instead of looking into two variants.
struct HeadKey {
  uint64_t time = 0;
  int rank = 0;
};

struct TraceReader::State {
  std::span<const uint8_t> file;
  std::vector<Cursor> cursors;
  std::vector<HeadKey> keys;  // by writer: its head's
  std::vector<ReadProblem> problems;
  uint64_t unknown_skipped = 0;
  std::size_t chunks = 0;
  uint64_t expected_records = 0;

  // Min-heap of writers by their head record. (Writers whose heads tie come out in the order
  // this heap's pops and pushes give them: that order is part of the output, so the heap is
  // always popped, then pushed, as it always was.)
  struct Later {
    const std::vector<HeadKey>* keys;
    bool operator()(std::size_t a, std::size_t b) const {
      const HeadKey& ka = (*keys)[a];
      const HeadKey& kb = (*keys)[b];
      if (ka.time != kb.time) return ka.time > kb.time;
      return ka.rank > kb.rank;
    }
  };
  std::priority_queue<std::size_t, std::vector<std::size_t>, Later> heap{Later{&keys}};
  PageAccess pages;
  uint32_t chunk_size = 0;
  std::vector<uint8_t> scratch;  // the chunk being checked, when pages.copy reads it
  // Chunks read to their end, not yet released: given back in batches, as runs of adjacent
  // chunks, because one release per chunk costs more than the pages are worth.
  std::vector<uint64_t> done_chunks;
  static constexpr std::size_t kReleaseBatch = 256;  // chunks (16 MiB of 64 KiB chunks)
  void chunk_done(uint64_t offset);
  void release_done();

  void scan(uint32_t chunk_size);
  void advance(std::size_t writer);
};

void TraceReader::State::scan(uint32_t chunk_size) {
  this->chunk_size = chunk_size;
  std::map<uint32_t, std::vector<ChunkRef>> by_writer;
  const uint64_t size = file.size();
  for (uint64_t off = kFirstChunkOffset; off < size; off += chunk_size) {
    if (size - off < kChunkHeaderSize) {
      problems.push_back(
          {ReadProblem::Kind::kTruncated, off, "the file ends inside a chunk header"});
      break;
    }
    const uint8_t* h = file.data() + off;
    if (pages.copy) {
      const uint64_t n = std::min<uint64_t>(chunk_size, size - off);
      scratch.resize(n);
      if (pages.copy(off, scratch.data(), n)) h = scratch.data();
    }
    const uint32_t magic = load_le<uint32_t>(h + ChunkHeaderLayout::kMagic);
    if (magic == 0) continue;  // space reserved for a chunk that was never handed out
    if (magic != kChunkMagic) {
      problems.push_back({ReadProblem::Kind::kCorrupt, off,
                          "damaged chunk header (bad magic); its records are lost"});
      continue;
    }
    ++chunks;
    const uint64_t published = load_le<uint64_t>(h + ChunkHeaderLayout::kPublished);
    const uint32_t length = published_length(published);
    const uint32_t thread = load_le<uint32_t>(h + ChunkHeaderLayout::kThread);
    if (length > chunk_size - kChunkHeaderSize) {
      problems.push_back(
          {ReadProblem::Kind::kCorrupt, off, "damaged chunk header (length past the chunk)"});
      continue;
    }
    if (length > size - off - kChunkHeaderSize) {
      problems.push_back({ReadProblem::Kind::kTruncated, off,
                          "the file ends inside a chunk of thread " + std::to_string(thread) +
                              " (" + std::to_string(off + kChunkHeaderSize + length - size) +
                              " bytes missing); its records are lost"});
      continue;
    }
    if (extend_crc(0, h + kChunkHeaderSize, length) != published_crc(published)) {
      problems.push_back({ReadProblem::Kind::kCorrupt, off,
                          "checksum mismatch in a chunk of thread " + std::to_string(thread) +
                              "; its records are lost"});
      continue;
    }
    by_writer[load_le<uint32_t>(h + ChunkHeaderLayout::kWriter)].push_back(
        {load_le<uint32_t>(h + ChunkHeaderLayout::kSequence), off, length, thread});
    // While the bytes are in the cache.
    expected_records += RecordDecoder::count_records({h + kChunkHeaderSize, length});
  }
  for (auto& [writer, list] : by_writer) {
    std::sort(list.begin(), list.end(),
              [](const ChunkRef& a, const ChunkRef& b) { return a.sequence < b.sequence; });
    Cursor cursor;
    cursor.chunks = std::move(list);
    cursors.push_back(std::move(cursor));
  }
  keys.resize(cursors.size());
  for (std::size_t i = 0; i < cursors.size(); ++i) {
    advance(i);
    if (cursors[i].has_head) heap.push(i);
  }
}

// Loads the writer's next record into its head, moving through its chunks.
void TraceReader::State::advance(std::size_t writer) {
  Cursor& c = cursors[writer];
  c.has_head = false;
  while (true) {
    if (c.decoder) {
      Record& record = c.slots[c.head_slot];
      if (c.decoder->next_into(record)) {
        const uint32_t thread = c.chunks[c.next_chunk - 1].thread;
        keys[writer] = std::visit(
            [thread](auto& r) {
              using R = std::decay_t<decltype(r)>;
              if constexpr (requires { r.thread; }) r.thread = thread;
              if constexpr (requires { r.time_ns; }) {
                return HeadKey{r.time_ns, tie_rank_of<R>()};
              } else {
                return HeadKey{0, tie_rank_of<R>()};
              }
            },
            record);
        c.has_head = true;
        return;
      }
      const StreamStatus& status = c.decoder->status();
      unknown_skipped += c.decoder->unknown_records_skipped();
      if (status.end != StreamEnd::kClean) {
        // A chunk whose checksum is right but whose records are not: a writer bug, not damage.
        problems.push_back({ReadProblem::Kind::kCorrupt, status.offset, status.reason});
      }
      c.decoder.reset();
      if (pages.release) chunk_done(c.chunks[c.next_chunk - 1].offset);
    }
    if (c.next_chunk == c.chunks.size()) return;
    const ChunkRef& chunk = c.chunks[c.next_chunk++];
    c.decoder.emplace(file.subspan(chunk.offset + kChunkHeaderSize, chunk.length),
                      chunk.offset + kChunkHeaderSize);
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
    : state_(std::make_unique<State>()) {
  state_->file = file;
  state_->pages = std::move(pages);
  state_->scan(header.chunk_size);
}

TraceReader::~TraceReader() = default;

const Record* TraceReader::next_record() {
  if (state_->heap.empty()) {
    if (!state_->done_chunks.empty()) state_->release_done();
    return nullptr;
  }
  const std::size_t writer = state_->heap.top();
  state_->heap.pop();
  Cursor& c = state_->cursors[writer];
  const Record* record = &c.slots[c.head_slot];
  c.head_slot ^= 1;  // the next head goes to the other slot
  state_->advance(writer);
  if (c.has_head) state_->heap.push(writer);
  return record;
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
