// SPDX-License-Identifier: Apache-2.0
// What recording costs the traced process, measured in it (GPUMEMTRACE_SELF_TIME=1): the events
// the recorder handled (allocations, frees, caching allocators' block events) and the time its
// threads spent in it, taking stacks apart. A benchmark across processes compares runs that a
// shared host's clock and neighbours move by tens of percent; this is the recorder's own share of
// the one run, whatever the host did. Off by default: it reads the clock two more times per event
// (six for an event with a stack).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "interpose/common/clock.h"

namespace gmt::interpose {

// What one event's stack cost, in its parts: the stack's taker fills it in.
struct StackCost {
  uint64_t python_ns = 0;            // reading the Python frames
  uint64_t native_frames = 0;        // unwound and kept
  uint64_t native_remembered = 0;    // native stacks from a remembered walk (stack_walker.h)
  uint64_t native_by_libunwind = 0;  // native stacks the walker left to libunwind
};

class RecorderCost {
 public:
  explicit RecorderCost(bool on) : on_(on) {}

  bool on() const { return on_; }
  // One event: `stacks` is 1 if it took a stack, which cost `stack_ns` of its `total_ns`.
  void add(uint64_t total_ns, uint64_t stacks, uint64_t stack_ns, const StackCost& parts) {
    events_.fetch_add(1, std::memory_order_relaxed);
    total_ns_.fetch_add(total_ns, std::memory_order_relaxed);
    stacks_.fetch_add(stacks, std::memory_order_relaxed);
    stack_ns_.fetch_add(stack_ns, std::memory_order_relaxed);
    python_ns_.fetch_add(parts.python_ns, std::memory_order_relaxed);
    native_frames_.fetch_add(parts.native_frames, std::memory_order_relaxed);
    native_remembered_.fetch_add(parts.native_remembered, std::memory_order_relaxed);
    native_by_libunwind_.fetch_add(parts.native_by_libunwind, std::memory_order_relaxed);
  }
  // The trace's note, e.g. "recorder cost: 1200 events, 345600 ns in the recorder, 201000 ns of
  // it taking 400 stacks (80000 ns of those reading Python frames, 4800 native frames, 390
  // native stacks remembered, 0 by libunwind) (GPUMEMTRACE_SELF_TIME); the measurement's own
  // clock reads, 21 ns each, are in these figures: one per event and four more per stack, three
  // of them in the stacks' ns and one in the Python frames'". A recording without the
  // measurement makes none of those reads; the figures less them are what it costs.
  std::string note() const;
  // What one clock read costs, as consecutive reads in this process see it (their median).
  static uint64_t clock_read_ns();
  void clear();  // a fork's child starts its own count

 private:
  const bool on_;
  std::atomic<uint64_t> events_{0};
  std::atomic<uint64_t> total_ns_{0};
  std::atomic<uint64_t> stacks_{0};
  std::atomic<uint64_t> stack_ns_{0};
  std::atomic<uint64_t> python_ns_{0};
  std::atomic<uint64_t> native_frames_{0};
  std::atomic<uint64_t> native_remembered_{0};
  std::atomic<uint64_t> native_by_libunwind_{0};
};

// Times one event from construction to destruction, with its stack apart, when cost is on.
class CostScope {
 public:
  explicit CostScope(RecorderCost& cost) : cost_(cost), start_(cost.on() ? monotonic_ns() : 0) {}
  ~CostScope() {
    if (cost_.on()) cost_.add(monotonic_ns() - start_, stacks_, stack_ns_, parts_);
  }
  CostScope(const CostScope&) = delete;
  CostScope& operator=(const CostScope&) = delete;

  // Runs `take(parts)` (which takes the stack, and counts its parts in `parts` unless that is
  // null), timing it apart.
  template <class Take>
  uint32_t stack(Take take) {
    if (!cost_.on()) return take(nullptr);
    const uint64_t begin = monotonic_ns();
    const uint32_t id = take(&parts_);
    stack_ns_ += monotonic_ns() - begin;
    ++stacks_;
    return id;
  }

 private:
  RecorderCost& cost_;
  const uint64_t start_;
  uint64_t stacks_ = 0;
  uint64_t stack_ns_ = 0;
  StackCost parts_;
};

}  // namespace gmt::interpose
