// SPDX-License-Identifier: Apache-2.0
// Reads framed records back from the bytes of a trace file. It never trusts the input: every
// length and value is checked, and when the bytes stop making sense it stops and says where
// and why, keeping everything before that point.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "format/file_header.h"
#include "format/memory_event.h"
#include "format/record_encoder.h"
#include "format/records.h"
#include "format/unchecked_fields.h"

namespace gmt::format {

enum class StreamEnd {
  kNotYet,     // still reading
  kClean,      // the bytes ended exactly after a complete record
  kTruncated,  // the bytes end in the middle of a record (a process killed while writing)
  kCorrupt,    // a record that cannot be right: reading stopped there
};

struct StreamStatus {
  StreamEnd end = StreamEnd::kNotYet;
  uint64_t offset = 0;  // file offset of the first byte not accepted
  std::string reason;   // for kTruncated and kCorrupt
};

// Decodes the records of one chunk's published payload, in order.
class RecordDecoder {
 public:
  // `payload` is a run of framed records; `file_offset` is where it starts in the file, for
  // the offsets that errors name. Records with a `thread` get `thread` (it is the chunk's, not
  // encoded in each record).
  RecordDecoder(std::span<const uint8_t> payload, uint64_t file_offset, uint64_t thread = 0);

  // The payload grew: `payload` starts where the one given so far did and is at least as long
  // (a chunk still being written, read while its writer publishes more). Reading goes on from
  // where it was; a clean end becomes not yet ended. Nothing changes after a truncated or corrupt
  // end, or for a shorter payload.
  void extend(std::span<const uint8_t> payload) {
    if (payload.data() != bytes_.data() || payload.size() < bytes_.size()) return;
    if (status_.end != StreamEnd::kNotYet && status_.end != StreamEnd::kClean) return;
    bytes_ = payload;
    if (status_.end == StreamEnd::kClean && pos_ < bytes_.size()) status_ = StreamStatus{};
  }

  // The next record, or nullopt once the stream has ended; status() then says how.
  std::optional<Record> next();
  // The same, decoded into `out`, whose strings and lists are reused when it already holds a
  // record of the same type: false at the end.
  bool next_into(Record& out) {
    MemoryEvent event;
    if (next_memory_event(event)) {
      to_record(event, out);
      return true;
    }
    return next_into_checked(out);
  }

  // The next record when it is an allocation or a free with room after it (nearly every record),
  // into `out`; otherwise false, having changed nothing but `out`.
  bool next_memory_event(MemoryEvent& out) { return next_memory_events(&out, 1) == 1; }

  // The same for as many records as come so, up to `most`, into out[0], out[1]...: how many.
  // Inline, without a check per field (format/unchecked_fields.h), the decoder's position and
  // codec state in locals: it runs for every record of a trace.
  std::size_t next_memory_events(MemoryEvent* out, std::size_t most) {
    // One-byte type and length, and every byte the record's widest encoding could take readable.
    constexpr std::size_t kRoom =
        2 + std::max(unchecked_read_bytes<AllocRecord>(), unchecked_read_bytes<FreeRecord>());
    if (status_.end != StreamEnd::kNotYet) return 0;
    const uint8_t* const bytes = bytes_.data();
    const std::size_t size = bytes_.size();
    const uint64_t thread = thread_;
    std::size_t pos = pos_;
    CodecState state = state_;
    std::size_t n = 0;
    while (n < most && size - pos >= kRoom) {
      const uint8_t* const p = bytes + pos;
      const uint8_t type = p[0];
      const uint8_t length = p[1];
      if (length >= 0x80 || length > size - pos - 2) break;
      if (size - pos > kPrefetchAhead) __builtin_prefetch(p + kPrefetchAhead);
      bool decoded = false;
      if (type == static_cast<uint8_t>(RecordType::kAlloc)) {
        decoded = decode_event_as<AllocRecord>(p + 2, p + 2 + length, state, thread, out[n].record);
      } else if (type == static_cast<uint8_t>(RecordType::kFree)) {
        decoded = decode_event_as<FreeRecord>(p + 2, p + 2 + length, state, thread, out[n].record);
      }
      if (!decoded) break;
      out[n].type = static_cast<RecordType>(type);
      ++n;
      pos += 2 + length;
    }
    if (n > 0) {
      pos_ = pos;
      state_ = state;
      last_type_ = out[n - 1].type;
      last_time_ = out[n - 1].record.time_ns;
    }
    return n;
  }

  // next_into() without its fast path: every field of every record checked one by one. The
  // two give the same records and stop at the same place for the same reason.
  bool next_into_checked(Record& out);

  // How many records next() would give for `payload` if every record's fields decode: the
  // framing alone is walked (lengths skip the fields), so this is cheap.
  static uint64_t count_records(std::span<const uint8_t> payload);

  // Of the record next_into() decoded last: its type and its time (0 for a record without one),
  // known without looking into the variant.
  RecordType last_type() const { return last_type_; }
  uint64_t last_time() const { return last_time_; }

  const StreamStatus& status() const { return status_; }
  uint64_t unknown_records_skipped() const { return unknown_skipped_; }

 private:
  // Result of decoding one frame's payload.
  enum class Decoded { kRecord, kUnknownType, kCorrupt };
  // The chunk's bytes come from memory: asking for them a few records ahead measurably
  // speeds the reader and the replay behind it (the hardware's own prefetch does not see the
  // writers' streams through the interleaved decoding).
  static constexpr std::size_t kPrefetchAhead = 512;
  Decoded decode_payload(uint64_t type, const uint8_t* begin, const uint8_t* end,
                         uint64_t frame_offset, Record& out);
  // A BlockFreedAtOnce record (4.7) at `frame_offset`: the Block record of the free request
  // just before it, as its completion.
  Decoded freed_at_once(const uint8_t* begin, const uint8_t* end, uint64_t frame_offset,
                        Record& out);
  void stop(StreamEnd end, uint64_t offset, std::string reason);

  std::span<const uint8_t> bytes_;
  uint64_t file_offset_ = 0;
  std::size_t pos_ = 0;
  uint64_t thread_ = 0;
  RecordType last_type_{};
  uint64_t last_time_ = 0;
  CodecState state_;
  // The last free request decoded, and where it ended (pos_ after it; 0: none), for the
  // BlockFreedAtOnce record that may follow it.
  BlockRecord request_;
  std::size_t request_end_ = 0;
  StreamStatus status_;
  uint64_t unknown_skipped_ = 0;
};

}  // namespace gmt::format
