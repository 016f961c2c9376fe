// SPDX-License-Identifier: Apache-2.0
#include "interpose/record/recorder_cost.h"

#include <algorithm>
#include <array>

namespace gmt::interpose {

void RecorderCost::add(uint64_t total_ns, uint64_t stacks, uint64_t stack_ns,
                       const StackCost& parts) {
  events_.fetch_add(1, std::memory_order_relaxed);
  total_ns_.fetch_add(total_ns, std::memory_order_relaxed);
  stacks_.fetch_add(stacks, std::memory_order_relaxed);
  stack_ns_.fetch_add(stack_ns, std::memory_order_relaxed);
  python_ns_.fetch_add(parts.python_ns, std::memory_order_relaxed);
  native_frames_.fetch_add(parts.native_frames, std::memory_order_relaxed);
  native_remembered_.fetch_add(parts.native_remembered, std::memory_order_relaxed);
  native_by_libunwind_.fetch_add(parts.native_by_libunwind, std::memory_order_relaxed);
}

std::string RecorderCost::note() const {
  auto text = [](const std::atomic<uint64_t>& n) {
    return std::to_string(n.load(std::memory_order_relaxed));
  };
  return "recorder cost: " + text(events_) + " events, " + text(total_ns_) +
         " ns in the recorder, " + text(stack_ns_) + " ns of it taking " + text(stacks_) +
         " stacks (" + text(python_ns_) + " ns of those reading Python frames, " +
         text(native_frames_) + " native frames, " + text(native_remembered_) +
         " native stacks remembered, " + text(native_by_libunwind_) +
         " by libunwind) (GPUMEMTRACE_SELF_TIME); the measurement's own clock reads, " +
         std::to_string(clock_read_ns()) +
         " ns each, are in these figures: one per event and four more per stack, three of them "
         "in the stacks' ns and one in the Python frames'";
}

// Between the times two consecutive reads return lies one whole read: the end of the first
// and the start of the second (each read as the measurement makes it, a call of now()). A timed
// interval holds that much of its own two reads, and all of any read inside it. The median leaves
// out reads a preemption or an interrupt stretched.
uint64_t RecorderCost::clock_read_ns() {
  constexpr std::size_t kReads = 1001;
  std::array<uint64_t, kReads> between{};
  uint64_t last = RecorderCost::now();
  for (uint64_t& gap : between) {
    const uint64_t now = RecorderCost::now();
    gap = now - last;
    last = now;
  }
  std::nth_element(between.begin(), between.begin() + kReads / 2, between.end());
  return between[kReads / 2];
}

void RecorderCost::clear() {
  for (std::atomic<uint64_t>* n : {&events_, &total_ns_, &stacks_, &stack_ns_, &python_ns_,
                                   &native_frames_, &native_remembered_, &native_by_libunwind_}) {
    n->store(0, std::memory_order_relaxed);
  }
}

}  // namespace gmt::interpose
