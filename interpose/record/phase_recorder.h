// SPDX-License-Identifier: Apache-2.0
// Phases: NVTX ranges and marks, and those of gpumemtrace.h, as PhaseRecords. Names are interned
// (a NameRecord the first time). A process that marks phases but never uses CUDA must leave no
// file, so phases that come before the trace exists wait in memory and are written as soon as it
// does, stamped then: before the first allocation, in the order they came.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "format/records.h"
#include "interpose/record/trace_writer.h"

namespace gmt::interpose {

class PhaseRecorder {
 public:
  static constexpr std::size_t kMaxPending = 4096;

  explicit PhaseRecorder(TraceWriter& writer) : writer_(writer) {}

  // The id of a name (a phase, a domain, a registered string), never 0.
  uint32_t name_id(std::string_view text);

  // Makes sure the NameRecord of `id` is in the file before a record that uses it (a name
  // interned before the trace existed is written late). Only once the trace exists.
  void ensure_written(uint32_t id);

  // NVTX's return values: the nesting level of the range pushed or popped (-1: none to pop).
  int push(uint32_t domain, uint32_t name);
  int pop(uint32_t domain);
  uint64_t start(uint32_t domain, uint32_t name);
  void end(uint64_t range);
  void mark(uint32_t domain, uint32_t name);

  // Writes the phases held back before the trace existed; cheap when there are none. The event
  // recorder calls it after each record, so that they are in the file even if no phase follows.
  void flush_if_pending() {
    if (pending_count_.load(std::memory_order_relaxed) != 0) flush_pending();
  }

  void before_fork() { mutex_.lock(); }
  void after_fork_in_parent() { mutex_.unlock(); }
  void after_fork_in_child();

 private:
  void emit(format::PhaseAction action, uint32_t domain, uint32_t name, uint64_t range);
  void flush_pending();
  void write_name_locked(uint32_t id);

  TraceWriter& writer_;
  std::mutex mutex_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<std::string> names_;  // by id - 1
  std::vector<bool> written_;       // whether its NameRecord is in the file
  std::vector<format::PhaseRecord> pending_;
  std::atomic<std::size_t> pending_count_{0};
  std::atomic<uint64_t> next_range_{1};
};

}  // namespace gmt::interpose
