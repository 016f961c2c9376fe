// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/live/live_trace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <queue>
#include <utility>

#include "format/chunk.h"
#include "format/record_decoder.h"
#include "format/recording_end.h"
#include "format/trace_reader.h"

namespace gmt::analyzer {

namespace {

// The marks of live bytes per second are kept this long (growth looks back a minute).
constexpr uint64_t kSecondsKept = 180;
constexpr uint64_t kSecond = 1'000'000'000;

bool pread_all(int fd, uint8_t* out, std::size_t n, uint64_t offset) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += static_cast<std::size_t>(got);
  }
  return true;
}

uint32_t u32le(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
uint64_t u64le(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint64_t dropped_word(const uint8_t* page) {
  return u64le(page + format::BoundedHeaderLayout::kDroppedRecords);
}

// A checkpoint's chunk holds its records and nothing else: the header does not count them as
// history when the chunk is reused.
bool checkpoint_record(const format::Record& r) {
  return std::holds_alternative<format::CheckpointRecord>(r) ||
         std::holds_alternative<format::CarriedRecord>(r) ||
         std::holds_alternative<format::CarriedBlockRecord>(r) ||
         std::holds_alternative<format::CarriedVmmRecord>(r) ||
         std::holds_alternative<format::CarriedPhaseRecord>(r);
}

// As the whole-file reader breaks ties: definitions, then frees, then allocations.
uint8_t tie_rank(const format::Record& r) {
  if (std::holds_alternative<format::FreeRecord>(r)) return 1;
  if (std::holds_alternative<format::AllocRecord>(r)) return 2;
  return 0;
}

}  // namespace

// The new records of one writer: its chunks with unread bytes, in sequence order, and the
// decoder of the first of them.
struct LiveTrace::Pending {
  uint32_t writer = 0;
  std::vector<std::size_t> chunks;  // indices into chunks_, by sequence
  std::size_t next_chunk = 0;
  std::vector<uint8_t> bytes;  // the payload of chunks[next_chunk - 1]
  std::optional<format::RecordDecoder> decoder;
  std::size_t chunk = 0;  // the chunk being decoded
  uint64_t to_skip = 0;   // records of it applied at an earlier refresh
  uint64_t decoded = 0;   // records of it decoded so far (skipped included)
  uint32_t length = 0;    // its published length read now
  std::optional<format::Record> head;
};

LiveTrace::LiveTrace(std::string path) : path_(std::move(path)) {}

LiveTrace::~LiveTrace() {
  if (fd_ >= 0) ::close(fd_);
}

bool LiveTrace::read_header() {
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      error_ = path_ + ": " + std::strerror(errno);
      return false;
    }
  }
  std::array<uint8_t, format::kFirstChunkOffset> page{};
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    error_ = path_ + ": " + std::strerror(errno);
    return false;
  }
  const std::size_t n = std::min<std::size_t>(page.size(), static_cast<std::size_t>(st.st_size));
  if (n > 0 && !pread_all(fd_, page.data(), n, 0)) {
    error_ = path_ + ": cannot read the header";
    return false;
  }
  if (!header_) {
    const format::HeaderCheck check = format::check_header(std::span(page.data(), n));
    if (!check.ok) {
      error_ = path_ + ": " + check.error;
      return false;
    }
    header_ = check.header;
  }
  if (n == page.size()) stop_reason_ = format::read_stop_reason(std::span(page.data(), n));
  return true;
}

bool LiveTrace::may_become_trace() const {
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st {};
  char head[64] = {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  const ssize_t got = regular ? ::pread(fd, head, sizeof head, 0) : -1;
  ::close(fd);
  return got >= 0 && std::all_of(head, head + got, [](char c) { return c == 0; });
}

void LiveTrace::reset() {
  replay_ = std::make_unique<Replay>();
  chunks_.clear();
  names_.clear();
  pushed_.clear();
  started_.clear();
  seconds_.clear();
  current_second_ = 0;
}

void LiveTrace::start_from_checkpoint(bool always) {
  // A copy taken while chunks were reused may hold a chunk half made over: taken again until
  // the header's count of reused records is the same after the copy as in it.
  std::vector<uint8_t> bytes;
  format::HeaderCheck header;
  for (int attempt = 0; attempt < 4; ++attempt) {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return;
    bytes.assign(static_cast<std::size_t>(st.st_size), 0);
    if (bytes.size() < format::kFirstChunkOffset || !pread_all(fd_, bytes.data(), bytes.size(), 0))
      return;
    header = format::check_header(bytes);
    if (!header.ok) return;
    std::array<uint8_t, 8> word{};
    if (!pread_all(fd_, word.data(), word.size(), format::BoundedHeaderLayout::kDroppedRecords))
      return;
    if (u64le(word.data()) == dropped_word(bytes.data())) break;
  }
  checkpoint_looked_ = true;
  // What was dropped before the copy is not the watch's to miss: it counts from here.
  header_dropped_ = seen_dropped_ = dropped_word(bytes.data());
  if (!always && header.header.valid_from == 0) return;  // nothing dropped: read as it comes
  format::TraceReader reader(bytes, header.header);
  if (!always && !reader.window().dropped) return;
  reset();
  while (const format::Record* record = reader.next_record()) apply(*record);
  replay_->summary().history = reader.window();
  known_from_ns_ = reader.window().dropped ? reader.window().kept_from_ns : 0;
  // Every chunk is read up to what the copy holds: the next refresh goes on from there. One
  // copied while it was written over (its checksum does not match) was left out by the reader:
  // the next refresh reads it whole.
  const uint64_t chunk_size = header.header.chunk_size;
  const uint64_t count = (bytes.size() - format::kFirstChunkOffset) / chunk_size;
  const format::ChunkChecksum checksum = format::chunk_checksum(header.header.major);
  chunks_.assign(count, ChunkState{});
  for (std::size_t i = 0; i < count; ++i) {
    const uint64_t offset = format::kFirstChunkOffset + i * chunk_size;
    const uint8_t* h = bytes.data() + offset;
    if (u32le(h + format::ChunkHeaderLayout::kMagic) != format::kChunkMagic) continue;
    const uint64_t published = u64le(h + format::ChunkHeaderLayout::kPublished);
    const uint32_t length = format::published_length(published);
    if (length > chunk_size - format::kChunkHeaderSize) continue;
    if (format::extend_checksum(checksum, 0, h + format::kChunkHeaderSize, length) !=
        format::published_crc(published))
      continue;
    ChunkState& c = chunks_[i];
    c.writer = u32le(h + format::ChunkHeaderLayout::kWriter);
    c.sequence = u32le(h + format::ChunkHeaderLayout::kSequence);
    c.thread = u32le(h + format::ChunkHeaderLayout::kThread);
    c.consumed_length = length;
    const std::span<const uint8_t> payload(h + format::kChunkHeaderSize, length);
    c.consumed_records = format::RecordDecoder::count_records(payload);
    format::RecordDecoder first(payload, offset + format::kChunkHeaderSize, c.thread);
    const std::optional<format::Record> record = first.next();
    c.holds_events = !record || !checkpoint_record(*record);
  }
}

bool LiveTrace::forget_if_reused(std::size_t i, const uint8_t* h) {
  ChunkState& c = chunks_[i];
  if (!c.final && c.consumed_length == 0) return false;  // nothing read of it yet
  const bool same = u32le(h + format::ChunkHeaderLayout::kMagic) == format::kChunkMagic &&
                    u32le(h + format::ChunkHeaderLayout::kWriter) == c.writer &&
                    u32le(h + format::ChunkHeaderLayout::kSequence) == c.sequence;
  if (same) return false;
  if (c.holds_events) seen_dropped_ += c.consumed_records;
  c = ChunkState{};
  return true;
}

bool LiveTrace::missed_records() {
  // Read after the chunks: it counts every reuse they showed. The count is stored before the
  // reused chunk's first byte is written over: a reuse under way when the chunks were read
  // shows in its chunk a moment later.
  std::array<uint8_t, 8> word{};
  if (!pread_all(fd_, word.data(), word.size(), format::BoundedHeaderLayout::kDroppedRecords))
    return false;
  header_dropped_ = u64le(word.data());
  for (int look = 0; look < 4 && header_dropped_ > seen_dropped_; ++look) {
    if (look > 0) ::usleep(1000);
    const uint64_t chunk_size = header_->chunk_size;
    for (std::size_t i = 0; i < chunks_.size(); ++i) {
      std::array<uint8_t, format::kChunkHeaderSize> h{};
      if (pread_all(fd_, h.data(), h.size(), format::kFirstChunkOffset + i * chunk_size))
        forget_if_reused(i, h.data());
    }
  }
  return header_dropped_ > seen_dropped_;
}

bool LiveTrace::refresh() {
  if (!read_header()) return false;
  error_.clear();
  if (!checkpoint_looked_ && header_->max_size != 0) start_from_checkpoint(false);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return false;
  const uint64_t chunk_size = header_->chunk_size;
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  const uint64_t count = file_size > format::kFirstChunkOffset
                             ? (file_size - format::kFirstChunkOffset) / chunk_size
                             : 0;
  if (chunks_.size() < count) chunks_.resize(count);
  const format::ChunkChecksum checksum = format::chunk_checksum(header_->major);

  // Which chunks grew, by writer.
  std::map<uint32_t, Pending> pending;
  std::map<uint32_t, uint32_t> last_sequence;  // per writer, its latest chunk seen
  std::vector<uint32_t> lengths(chunks_.size(), 0);
  for (std::size_t i = 0; i < chunks_.size(); ++i) {
    ChunkState& c = chunks_[i];
    // A bounded trace reuses the space of its oldest chunks: a chunk done with may start again
    // as another writer's.
    if (c.final && !bounded()) continue;
    std::array<uint8_t, format::kChunkHeaderSize> h{};
    const uint64_t offset = format::kFirstChunkOffset + i * chunk_size;
    if (!pread_all(fd_, h.data(), h.size(), offset)) continue;
    if (!(bounded() && forget_if_reused(i, h.data())) && c.final) continue;
    if (u32le(h.data() + format::ChunkHeaderLayout::kMagic) != format::kChunkMagic) continue;
    c.writer = u32le(h.data() + format::ChunkHeaderLayout::kWriter);
    c.sequence = u32le(h.data() + format::ChunkHeaderLayout::kSequence);
    c.thread = u32le(h.data() + format::ChunkHeaderLayout::kThread);
    const uint32_t length =
        format::published_length(u64le(h.data() + format::ChunkHeaderLayout::kPublished));
    if (length > chunk_size - format::kChunkHeaderSize) continue;
    auto [it, fresh] = last_sequence.emplace(c.writer, c.sequence);
    if (!fresh) it->second = std::max(it->second, c.sequence);
    lengths[i] = length;
    if (length > c.consumed_length) pending[c.writer].chunks.push_back(i);
  }
  for (auto& [writer, p] : pending) {
    p.writer = writer;
    std::sort(p.chunks.begin(), p.chunks.end(), [&](std::size_t a, std::size_t b) {
      return chunks_[a].sequence < chunks_[b].sequence;
    });
  }

  // Loads the next chunk of a writer into its decoder; false when it has none left.
  auto open_next = [&](Pending& p) -> bool {
    while (p.next_chunk < p.chunks.size()) {
      const std::size_t i = p.chunks[p.next_chunk++];
      ChunkState& c = chunks_[i];
      const uint64_t offset = format::kFirstChunkOffset + i * chunk_size;
      p.bytes.resize(format::kChunkHeaderSize + lengths[i]);
      if (!pread_all(fd_, p.bytes.data(), p.bytes.size(), offset)) continue;
      // Reused since its header was read: its bytes are another writer's now (the next refresh
      // sees it so).
      if (u32le(p.bytes.data() + format::ChunkHeaderLayout::kMagic) != format::kChunkMagic ||
          u32le(p.bytes.data() + format::ChunkHeaderLayout::kWriter) != c.writer ||
          u32le(p.bytes.data() + format::ChunkHeaderLayout::kSequence) != c.sequence)
        continue;
      const uint64_t published = u64le(p.bytes.data() + format::ChunkHeaderLayout::kPublished);
      // The chunk may have grown since its header was read: its word now covers what was read.
      const uint32_t length = std::min<uint32_t>(format::published_length(published), lengths[i]);
      const uint8_t* payload = p.bytes.data() + format::kChunkHeaderSize;
      if (format::published_length(published) == length &&
          format::extend_checksum(checksum, 0, payload, length) !=
              format::published_crc(published)) {
        ++checksum_mismatches_;
        continue;
      }
      p.chunk = i;
      p.length = length;
      p.to_skip = c.consumed_records;
      p.decoded = 0;
      p.decoder.emplace(std::span<const uint8_t>(payload, length),
                        offset + format::kChunkHeaderSize, c.thread);
      return true;
    }
    return false;
  };
  // The writer's next new record into p.head; none when it has no more.
  auto advance = [&](Pending& p) {
    p.head.reset();
    while (true) {
      if (p.decoder) {
        while (std::optional<format::Record> r = p.decoder->next()) {
          ++p.decoded;
          if (p.decoded == 1) chunks_[p.chunk].holds_events = !checkpoint_record(*r);
          if (p.decoded <= p.to_skip) continue;
          p.head = std::move(r);
          return;
        }
        // The chunk is consumed up to what was read (a record cut at its end is not published).
        ChunkState& c = chunks_[p.chunk];
        c.consumed_length = p.length;
        c.consumed_records = std::max(c.consumed_records, p.decoded);
        p.decoder.reset();
      }
      if (!open_next(p)) return;
    }
  };

  using Head = std::pair<uint64_t, uint32_t>;  // (time << 2 | rank, writer)
  std::priority_queue<Head, std::vector<Head>, std::greater<>> heads;
  auto push_head = [&](Pending& p) {
    if (!p.head) return;
    const uint64_t t = std::min<uint64_t>(format::record_time(*p.head), (uint64_t{1} << 62) - 2);
    heads.emplace(t << 2 | tie_rank(*p.head), p.writer);
  };
  for (auto& [writer, p] : pending) {
    advance(p);
    push_head(p);
  }
  while (!heads.empty()) {
    const uint32_t writer = heads.top().second;
    heads.pop();
    Pending& p = pending[writer];
    apply(*p.head);
    ++chunks_[p.chunk].consumed_records;
    advance(p);
    push_head(p);
  }

  // A chunk fully consumed whose writer went on to a later chunk never grows again.
  for (ChunkState& c : chunks_) {
    if (c.final || c.consumed_length == 0) continue;
    auto it = last_sequence.find(c.writer);
    if (it != last_sequence.end() && it->second > c.sequence) c.final = true;
  }
  if (bounded() && missed_records()) {
    ++behind_.times;
    behind_.records_missed += header_dropped_ - seen_dropped_;
    start_from_checkpoint(true);
    behind_.history_from_ns = known_from_ns_;
  }
  replay_->finish();
  mark_second(latest_time_ns_);
  return true;
}

void LiveTrace::apply(const format::Record& record) {
  const uint64_t time = format::record_time(record);
  if (time / kSecond != current_second_) mark_second(time);
  if (const auto* info = std::get_if<format::ProcessInfoRecord>(&record)) {
    described_ = true;
    mono_start_ns_ = info->mono_start_ns;
  } else if (std::holds_alternative<format::EndRecord>(record)) {
    saw_end_ = true;
  } else if (const auto* name = std::get_if<format::NameRecord>(&record)) {
    names_[name->id] = name->text;
  } else if (const auto* phase = std::get_if<format::PhaseRecord>(&record)) {
    std::string text = names_.count(phase->name) ? names_[phase->name] : std::string();
    if (phase->domain != 0 && names_.count(phase->domain))
      text = names_[phase->domain] + "::" + text;
    switch (static_cast<format::PhaseAction>(phase->action)) {
      case format::PhaseAction::kPush:
        pushed_[phase->tid].emplace_back(phase->domain, text);
        break;
      case format::PhaseAction::kPop: {
        auto it = pushed_.find(phase->tid);
        if (it == pushed_.end()) break;
        auto& stack = it->second;
        for (auto r = stack.rbegin(); r != stack.rend(); ++r) {
          if (r->first == phase->domain) {
            stack.erase(std::next(r).base());
            break;
          }
        }
        if (stack.empty()) pushed_.erase(it);
        break;
      }
      case format::PhaseAction::kStart:
        started_[phase->range] = text;
        break;
      case format::PhaseAction::kEnd:
        started_.erase(phase->range);
        break;
      case format::PhaseAction::kMark:
        break;
    }
  }
  replay_->apply(record);
  ++records_applied_;
  latest_time_ns_ = std::max(latest_time_ns_, time);
}

// Notes each device's live bytes as those at the end of the second before `time_ns`.
void LiveTrace::mark_second(uint64_t time_ns) {
  const uint64_t second = time_ns / kSecond;
  for (const auto& [ordinal, d] : replay_->summary().devices) {
    auto& marks = seconds_[ordinal];
    if (!marks.empty() && marks.back().first == current_second_) {
      marks.back().second = d.live_bytes;
    } else {
      marks.emplace_back(current_second_, d.live_bytes);
    }
    // The oldest mark kept is older than the window: the bytes at any time in it are known.
    while (marks.size() > 1 && marks[1].first + kSecondsKept < second) marks.pop_front();
  }
  current_second_ = std::max(current_second_, second);
}

std::optional<uint64_t> LiveTrace::live_bytes_at(int device, uint64_t time_ns) const {
  if (time_ns < known_from_ns_) return std::nullopt;
  auto it = seconds_.find(device);
  if (it == seconds_.end() || it->second.empty()) return 0;
  const uint64_t second = time_ns / kSecond;
  // The latest mark at or before that second: the bytes live when it ended.
  uint64_t bytes = 0;
  bool found = false;
  for (const auto& [s, b] : it->second) {
    if (s + 1 > second) break;
    bytes = b;
    found = true;
  }
  if (found) return bytes;
  // Before the device's first mark: nothing was live on it, if the replay holds the history
  // from the trace's start.
  if (known_from_ns_ > 0) return std::nullopt;
  return 0;
}

std::vector<std::string> LiveTrace::open_phases() const {
  std::vector<std::string> open;
  for (const auto& [tid, stack] : pushed_) {
    for (const auto& [domain, name] : stack) open.push_back(name);
  }
  for (const auto& [range, name] : started_) open.push_back(name);
  return open;
}

}  // namespace gmt::analyzer
