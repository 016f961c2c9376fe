// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/input/record_pipeline.h"

#include <sched.h>

#include <algorithm>
#include <array>
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

// Reads up to batch_records_ records (events and others) into `batch`, reusing its buffers;
// `last` once the reader has given its last record.
void RecordPipeline::fill(Batch& batch, bool& last) {
  batch.events.clear();
  batch.other_count = 0;
  std::array<const format::MemoryEvent*, format::TraceReader::kBatchEvents> events;
  while (batch.events.size() + batch.other_count < batch_records_) {
    const std::size_t room = batch_records_ - batch.events.size() - batch.other_count;
    const format::TraceReader::Batch read =
        reader_.next_batch(std::span(events).first(std::min(room, events.size())));
    if (read.events == 0 && read.other == nullptr) {
      last = true;
      return;
    }
    for (std::size_t i = 0; i < read.events; ++i) batch.events.push_back(*events[i]);
    if (read.other == nullptr) continue;
    // Copy-assigning into the records of a used batch reuses their strings and lists.
    if (batch.other_count < batch.others.size()) {
      batch.others[batch.other_count] = {batch.events.size(), *read.other};
    } else {
      batch.others.emplace_back(batch.events.size(), *read.other);
    }
    ++batch.other_count;
  }
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
      bool last = false;
      fill(batch, last);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!batch.events.empty() || batch.other_count > 0) full_.push_back(std::move(batch));
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

format::TraceReader::Batch RecordPipeline::next_handed_over(
    std::span<const format::MemoryEvent*> out) {
  const std::size_t most = std::min(out.size(), format::TraceReader::kBatchEvents);
  while (true) {
    const bool other_left = other_pos_ < current_.other_count;
    // The events up to the next record of another type, or to the batch's end.
    const std::size_t stop =
        other_left ? current_.others[other_pos_].first : current_.events.size();
    const std::size_t n = std::min(stop - event_pos_, most);
    if (n > 0 || other_left) {
      for (std::size_t i = 0; i < n; ++i) out[i] = &current_.events[event_pos_ + i];
      event_pos_ += n;
      if (event_pos_ < stop || !other_left) return {n, nullptr};
      return {n, &current_.others[other_pos_++].second};
    }
    if (!take_full_batch()) return {};
  }
}

bool RecordPipeline::take_full_batch() {
  std::unique_lock<std::mutex> lock(mutex_);
  empty_.push_back(std::move(current_));
  changed_.notify_all();
  changed_.wait(lock, [this] { return !full_.empty() || done_; });
  event_pos_ = 0;
  other_pos_ = 0;
  if (full_.empty()) {
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    current_ = Batch{};
    return false;
  }
  current_ = std::move(full_.front());
  full_.pop_front();
  return true;
}

}  // namespace gmt::analyzer
