// SPDX-License-Identifier: Apache-2.0
// Reads a whole trace file: finds its chunks, keeps those whose published bytes check out, and
// merges the writers' records into one stream in time order. Memory grows with the number of
// chunks and writers, not with the number of records.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "format/file_header.h"
#include "format/memory_event.h"
#include "format/records.h"

namespace gmt::format {

// Something the reader had to leave out, with where and why. Everything else is still read.
struct ReadProblem {
  enum class Kind { kTruncated, kCorrupt };
  Kind kind;
  uint64_t offset;
  std::string reason;
};

// The time a record is ordered by (the process description has none: it comes first).
uint64_t record_time(const Record& record);

// For a file mapping, how the reader keeps few of its pages resident, whatever the trace's size:
// the up-front pass reads copies (`copy`: n bytes at offset into out, false on failure: of every
// chunk before format 4.1, of the headers and the chunks without a record count from 4.1), and
// each chunk's pages are dropped once it has been decoded (`release`; they come back from the
// page cache if read again). Neither may be used on memory that must keep its
// contents.
struct PageAccess {
  std::function<bool(uint64_t offset, uint8_t* out, std::size_t n)> copy;
  std::function<void(uint64_t offset, uint64_t length)> release;
};

// An allocation or block a bounded trace's checkpoint carried: when it was made, and where, so
// that what it says of the history dropped (a site growing all along) is not lost with it.
struct CarriedOrigin {
  uint64_t time_ns = 0;  // of its Alloc (Block) record, before the history kept
  uint64_t size = 0;
  int32_t device = -1;
  uint32_t stack = 0;
  uint32_t allocator = 0;  // a block's caching allocator
  bool block = false;      // a caching allocator's live block (CarriedBlock, kAlloc)
};

// What a bounded trace (format 4.3) kept of its history. The reader gives the records from
// `kept_from_ns` on, with what a checkpoint carried from before as allocations at that time;
// definitions (stacks, modules, contexts...) whatever their time.
struct HistoryWindow {
  uint64_t max_size = 0;  // the trace's size limit; 0: unbounded (nothing below applies)
  // How far the writer's chunks reach (the header's word, else the file's size): past max_size
  // when the bound could not hold (no checkpoint made a chunk reusable in time).
  uint64_t written_bytes = 0;
  bool dropped = false;  // history was dropped: the records start at kept_from_ns
  uint64_t kept_from_ns = 0;
  uint32_t checkpoint = 0;           // the checkpoint replayed from
  uint64_t dropped_records = 0;      // events before kept_from_ns: written over, or still there
  uint64_t carried_allocations = 0;  // live at kept_from_ns, given as allocations then
  uint64_t carried_bytes = 0;        // their bytes (address reservations left out)
  uint64_t carried_blocks = 0;       // caching allocators' blocks, segments and mapped ranges, as
                                     // Block records then
  // Why the history before the last records could not be rebuilt, when it could not (no whole
  // checkpoint left to start from): the records are then given as they are.
  std::string problem;
  // The allocations and live blocks carried, as they are given (complete once read to the end).
  std::vector<CarriedOrigin> carried;
};

class TraceReader {
 public:
  // `file` is the whole file; check_header() must have accepted it with `header`.
  TraceReader(std::span<const uint8_t> file, const FileHeader& header, PageAccess pages = {});
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  // The next record in time order (ties: definitions, then frees, then allocations, so that an
  // address freed and reused in the same nanosecond stays consistent; then by writer id), or
  // nullopt at the end. Times from 2^62 - 2 ns on (146 years after the process started: only a
  // damaged record has one) count as equal.
  std::optional<Record> next();
  // The same without copying: the record stays valid until the next call (of either).
  const Record* next_record();

  // The records in the same order, in batches, for going through a whole trace quickly: the
  // allocations and frees that come next, at most kBatchEvents of them and out.size(), into
  // `out` (events; it must have room for one at least, else std::invalid_argument), then, when
  // the record after them is of another type, that record (other).
  // Both are valid until the next call. At the end: no events and no record. A reader is read
  // either in batches or a record at a time (next_record() and next() read batches of their
  // own), not both.
  struct Batch {
    std::size_t events = 0;
    const Record* other = nullptr;
  };
  static constexpr std::size_t kBatchEvents = 64;
  Batch next_batch(std::span<const MemoryEvent*> out);

  // How many records the reader gives if every record's fields decode, known before the first:
  // the number of framed records of known types in the chunks kept; from format 4.1, as the
  // chunk headers count them (a chunk whose checksum turns out wrong when it is decoded, or a
  // damaged count, makes it differ from the records given).
  uint64_t expected_records() const;

  const std::vector<ReadProblem>& problems() const;
  uint64_t unknown_records_skipped() const;
  std::size_t chunk_count() const;
  const HistoryWindow& window() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gmt::format
