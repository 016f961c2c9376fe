// SPDX-License-Identifier: Apache-2.0
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
#include <span>
#include <stdexcept>
#include <thread>
#include <utility>
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
  // is gone (its thread reads it). The thread hands over batches of about `batch_records`.
  explicit RecordPipeline(format::TraceReader& reader, Mode mode = Mode::kAuto,
                          std::size_t batch_records = 4096);
  ~RecordPipeline();
  RecordPipeline(const RecordPipeline&) = delete;
  RecordPipeline& operator=(const RecordPipeline&) = delete;

  // The reader's records, as TraceReader::next_batch() gives them (the same records in the same
  // order, though not necessarily cut at the same places), valid until the next call. Rethrows
  // what the reading thread threw.
  format::TraceReader::Batch next_batch(std::span<const format::MemoryEvent*> out) {
    if (!thread_.joinable()) return reader_.next_batch(out);
    if (out.empty())
      throw std::invalid_argument("RecordPipeline::next_batch: no room for an event");
    return next_handed_over(out);
  }

  // Whether records are read on a second thread.
  bool threaded() const { return thread_.joinable(); }

 private:
  // What the thread hands over: the events copied out of the reader, and the records of other
  // types, each with the number of events before it in the batch.
  struct Batch {
    std::vector<format::MemoryEvent> events;
    std::vector<std::pair<std::size_t, format::Record>> others;  // the first `other_count`
    std::size_t other_count = 0;
  };
  void read_batches();
  void fill(Batch& batch, bool& last);
  format::TraceReader::Batch next_handed_over(std::span<const format::MemoryEvent*> out);
  bool take_full_batch();

  format::TraceReader& reader_;
  std::size_t batch_records_;
  Batch current_;  // the consumer's batch
  std::size_t event_pos_ = 0;
  std::size_t other_pos_ = 0;

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
