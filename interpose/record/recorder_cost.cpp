// SPDX-License-Identifier: Apache-2.0
#include "interpose/record/recorder_cost.h"

namespace gmt::interpose {

std::string RecorderCost::note() const {
  auto text = [](const std::atomic<uint64_t>& n) {
    return std::to_string(n.load(std::memory_order_relaxed));
  };
  return "recorder cost: " + text(events_) + " events, " + text(total_ns_) +
         " ns in the recorder, " + text(stack_ns_) + " ns of it taking " + text(stacks_) +
         " stacks (" + text(python_ns_) + " ns of those reading Python frames, " +
         text(native_frames_) + " native frames, " + text(native_remembered_) +
         " native stacks remembered, " + text(native_by_libunwind_) +
         " by libunwind) (GPUMEMTRACE_SELF_TIME)";
}

void RecorderCost::clear() {
  for (std::atomic<uint64_t>* n : {&events_, &total_ns_, &stacks_, &stack_ns_, &python_ns_,
                                   &native_frames_, &native_remembered_, &native_by_libunwind_}) {
    n->store(0, std::memory_order_relaxed);
  }
}

}  // namespace gmt::interpose
