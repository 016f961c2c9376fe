// Reads framed records back from the bytes of a trace file. It never trusts the input: every
// length and value is checked, and when the bytes stop making sense it stops and says where
// and why, keeping everything before that point.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "format/file_header.h"
#include "format/record_encoder.h"
#include "format/records.h"

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

  // The next record, or nullopt once the stream has ended; status() then says how.
  std::optional<Record> next();
  // The same, decoded into `out`, whose strings and lists are reused when it already holds a
  // record of the same type (most records are allocations and frees): false at the end.
  bool next_into(Record& out);

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
  Decoded decode_payload(uint64_t type, const uint8_t* begin, const uint8_t* end,
                         uint64_t frame_offset, Record& out);
  void stop(StreamEnd end, uint64_t offset, std::string reason);

  std::span<const uint8_t> bytes_;
  uint64_t file_offset_ = 0;
  std::size_t pos_ = 0;
  uint64_t thread_ = 0;
  RecordType last_type_{};
  uint64_t last_time_ = 0;
  CodecState state_;
  StreamStatus status_;
  uint64_t unknown_skipped_ = 0;
};

}  // namespace gmt::format
