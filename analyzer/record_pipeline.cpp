#include "analyzer/record_pipeline.h"

#include <sched.h>

#include <system_error>
#include <utility>

namespace gmt::analyzer {

namespace {
// Batches in flight: one being read, one ready, one being replayed.
constexpr std::size_t kBatches = 3;
}  // namespace

unsigned usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  const int n = CPU_COUNT(&set);
  return n > 0 ? static_cast<unsigned>(n) : 1;
}

RecordPipeline::RecordPipeline(format::TraceReader& reader, Mode mode, std::size_t batch_records)
    : reader_(reader), batch_records_(batch_records > 0 ? batch_records : 1) {
  const bool thread = mode == Mode::kThread || (mode == Mode::kAuto && usable_cpus() >= 2);
  if (!thread) return;
  for (std::size_t i = 0; i + 1 < kBatches; ++i) empty_.emplace_back();
  try {
    thread_ = std::thread([this] { read_batches(); });
  } catch (const std::system_error&) {
    // No thread to be had (a process or thread limit): read on the caller's thread.
    empty_.clear();
  }
}

RecordPipeline::~RecordPipeline() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void RecordPipeline::read_batches() {
  try {
    while (true) {
      Batch batch;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [this] { return stop_ || !empty_.empty(); });
        if (stop_) return;
        batch = std::move(empty_.front());
        empty_.pop_front();
      }
      // Copy-assigning into the records of a used batch reuses their strings and lists.
      std::size_t n = 0;
      while (n < batch_records_) {
        const format::Record* record = reader_.next_record();
        if (record == nullptr) break;
        if (n < batch.size()) {
          batch[n] = *record;
        } else {
          batch.push_back(*record);
        }
        ++n;
      }
      batch.resize(n);
      const bool last = n < batch_records_;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (n > 0) full_.push_back(std::move(batch));
        done_ = last;
      }
      changed_.notify_all();
      if (last) return;
    }
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
      done_ = true;
    }
    changed_.notify_all();
  }
}

bool RecordPipeline::take_full_batch() {
  std::unique_lock<std::mutex> lock(mutex_);
  empty_.push_back(std::move(current_));
  changed_.notify_all();
  changed_.wait(lock, [this] { return !full_.empty() || done_; });
  if (full_.empty()) {
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    current_.clear();
    position_ = 0;
    return false;
  }
  current_ = std::move(full_.front());
  full_.pop_front();
  position_ = 0;
  return true;
}

}  // namespace gmt::analyzer
