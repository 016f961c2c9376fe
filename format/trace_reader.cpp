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
int tie_rank(const Record& r) {
  if (std::holds_alternative<ProcessInfoRecord>(r) || std::holds_alternative<ContextRecord>(r) ||
      std::holds_alternative<StackRecord>(r) || std::holds_alternative<ModuleRecord>(r) ||
      std::holds_alternative<PythonCodeRecord>(r) || std::holds_alternative<ThreadRecord>(r) ||
      std::holds_alternative<NameRecord>(r) || std::holds_alternative<DeviceRecord>(r)) {
    return 0;
  }
  if (std::holds_alternative<FreeRecord>(r) || std::holds_alternative<UnmapRecord>(r) ||
      std::holds_alternative<ContextDestroyedRecord>(r)) {
    return 1;
  }
  return 2;
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

// One writer's chunks, read in sequence, one record ahead.
struct Cursor {
  std::vector<ChunkRef> chunks;
  std::size_t next_chunk = 0;
  std::optional<RecordDecoder> decoder;
  std::optional<Record> head;
};

struct TraceReader::State {
  std::span<const uint8_t> file;
  std::vector<Cursor> cursors;
  std::vector<ReadProblem> problems;
  uint64_t unknown_skipped = 0;
  std::size_t chunks = 0;

  // Min-heap of writers by their head record.
  struct Later {
    const std::vector<Cursor>* cursors;
    bool operator()(std::size_t a, std::size_t b) const {
      const Record& ra = *(*cursors)[a].head;
      const Record& rb = *(*cursors)[b].head;
      const uint64_t ta = record_time(ra), tb = record_time(rb);
      if (ta != tb) return ta > tb;
      return tie_rank(ra) > tie_rank(rb);
    }
  };
  std::priority_queue<std::size_t, std::vector<std::size_t>, Later> heap{Later{&cursors}};

  void scan(uint32_t chunk_size);
  void advance(std::size_t writer);
};

void TraceReader::State::scan(uint32_t chunk_size) {
  std::map<uint32_t, std::vector<ChunkRef>> by_writer;
  const uint64_t size = file.size();
  for (uint64_t off = kFirstChunkOffset; off < size; off += chunk_size) {
    if (size - off < kChunkHeaderSize) {
      problems.push_back(
          {ReadProblem::Kind::kTruncated, off, "the file ends inside a chunk header"});
      break;
    }
    const uint8_t* h = file.data() + off;
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
  }
  for (auto& [writer, list] : by_writer) {
    std::sort(list.begin(), list.end(),
              [](const ChunkRef& a, const ChunkRef& b) { return a.sequence < b.sequence; });
    Cursor cursor;
    cursor.chunks = std::move(list);
    cursors.push_back(std::move(cursor));
  }
  for (std::size_t i = 0; i < cursors.size(); ++i) {
    advance(i);
    if (cursors[i].head) heap.push(i);
  }
}

// Loads the writer's next record into its head, moving through its chunks.
void TraceReader::State::advance(std::size_t writer) {
  Cursor& c = cursors[writer];
  c.head.reset();
  while (true) {
    if (c.decoder) {
      if (auto record = c.decoder->next()) {
        const uint32_t thread = c.chunks[c.next_chunk - 1].thread;
        std::visit(
            [thread](auto& r) {
              if constexpr (requires { r.thread; }) r.thread = thread;
            },
            *record);
        c.head = std::move(record);
        return;
      }
      const StreamStatus& status = c.decoder->status();
      unknown_skipped += c.decoder->unknown_records_skipped();
      if (status.end != StreamEnd::kClean) {
        // A chunk whose checksum is right but whose records are not: a writer bug, not damage.
        problems.push_back({ReadProblem::Kind::kCorrupt, status.offset, status.reason});
      }
      c.decoder.reset();
    }
    if (c.next_chunk == c.chunks.size()) return;
    const ChunkRef& chunk = c.chunks[c.next_chunk++];
    c.decoder.emplace(file.subspan(chunk.offset + kChunkHeaderSize, chunk.length),
                      chunk.offset + kChunkHeaderSize);
  }
}

TraceReader::TraceReader(std::span<const uint8_t> file, const FileHeader& header)
    : state_(std::make_unique<State>()) {
  state_->file = file;
  state_->scan(header.chunk_size);
}

TraceReader::~TraceReader() = default;

std::optional<Record> TraceReader::next() {
  if (state_->heap.empty()) return std::nullopt;
  const std::size_t writer = state_->heap.top();
  state_->heap.pop();
  std::optional<Record> record = std::move(state_->cursors[writer].head);
  state_->advance(writer);
  if (state_->cursors[writer].head) state_->heap.push(writer);
  return record;
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
