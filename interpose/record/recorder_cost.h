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
  // One event: `stacks` is 1 if it took a stack, which cost `stack_ns` of its `total_ns`. Out of
  // line, as is all of the measurement: its code would sit among the event's own, in lines of
  // an instruction cache the program keeps cold, for every recording that does not measure.
  __attribute__((noinline, cold)) void add(uint64_t total_ns, uint64_t stacks, uint64_t stack_ns,
                                           const StackCost& parts);
  __attribute__((noinline, cold)) static uint64_t now() { return monotonic_ns(); }
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
  explicit CostScope(RecorderCost& cost)
      : cost_(cost), start_(__builtin_expect(cost.on(), 0) ? RecorderCost::now() : 0) {}
  ~CostScope() {
    if (cost_.on()) [[unlikely]]
      cost_.add(RecorderCost::now() - start_, stacks_, stack_ns_, parts_);
  }
  CostScope(const CostScope&) = delete;
  CostScope& operator=(const CostScope&) = delete;

  // Runs `take(parts)` (which takes the stack, and counts its parts in `parts` unless that is
  // null), timing it apart.
  template <class Take>
  uint32_t stack(Take take) {
    if (!cost_.on()) [[likely]]
      return take(nullptr);
    const uint64_t begin = RecorderCost::now();
    const uint32_t id = take(&parts_);
    stack_ns_ += RecorderCost::now() - begin;
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
