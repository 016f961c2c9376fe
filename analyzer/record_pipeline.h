// Reads a trace's records on a second thread while the caller replays them. Decoding and merging
// the writers' records takes about as long as replaying them, so with two CPUs a trace is
// summarized in little more than the time of the slower half. Records are handed over in
// batches, copied out of the reader; where this process may run on one CPU only, the records
// are read on the caller's thread instead, exactly as without a pipeline.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "format/trace_reader.h"

namespace gmt::analyzer {

class RecordPipeline {
 public:
  enum class Mode {
    kAuto,    // a thread when the process may use two CPUs or more
    kInline,  // no thread
    kThread,  // a thread whatever the CPUs (tests)
  };

  // `reader` must outlive the pipeline, and is not to be used by the caller until the pipeline
  // is gone (its thread reads it).
  explicit RecordPipeline(format::TraceReader& reader, Mode mode = Mode::kAuto,
                          std::size_t batch_records = 4096);
  ~RecordPipeline();
  RecordPipeline(const RecordPipeline&) = delete;
  RecordPipeline& operator=(const RecordPipeline&) = delete;

  // The next record in the reader's order, or nullptr at the end; valid until the next call.
  // Rethrows what the reading thread threw.
  const format::Record* next() {
    if (!thread_.joinable()) return reader_.next_record();
    if (position_ == current_.size() && !take_full_batch()) return nullptr;
    return &current_[position_++];
  }

  // The address of an allocation or a free that next() will give soon, already read, for
  // asking the memory early for the live allocation it will touch: a few places ahead in a
  // batch read on the thread; without a thread, the one the reader decoded last
  // (TraceReader::newest_address(), which may name an earlier record's address instead).
  // 0 when none is known.
  uint64_t soon_address() const {
    if (!thread_.joinable()) return reader_.newest_address();
    const std::size_t i = position_ + kSoon - 1;
    if (i >= current_.size()) return 0;
    if (const auto* a = std::get_if<format::AllocRecord>(&current_[i])) return a->address;
    if (const auto* f = std::get_if<format::FreeRecord>(&current_[i])) return f->address;
    return 0;
  }

  // Whether records are read on a second thread.
  bool threaded() const { return thread_.joinable(); }

 private:
  using Batch = std::vector<format::Record>;
  // How far ahead soon_address() looks in a batch: enough for a miss to memory to be served before
  // the record is replayed (measured: 8 places hide it, 2 half of it).
  static constexpr std::size_t kSoon = 8;
  void read_batches();
  bool take_full_batch();

  format::TraceReader& reader_;
  std::size_t batch_records_;
  Batch current_;  // the consumer's batch
  std::size_t position_ = 0;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Batch> full_;   // read, in order, not yet taken
  std::deque<Batch> empty_;  // given back, to be refilled (their records' buffers reused)
  bool done_ = false;        // the reader has nothing more (or threw)
  bool stop_ = false;        // the consumer is gone
  std::exception_ptr error_;
  std::thread thread_;
};

// How many CPUs this process may run on (its affinity mask), at least 1.
unsigned usable_cpus();

}  // namespace gmt::analyzer
