// SPDX-License-Identifier: Apache-2.0
#include "interpose/record/recorder_cost.h"

namespace gmt::interpose {

std::string RecorderCost::note() const {
  return "recorder cost: " + std::to_string(events_.load(std::memory_order_relaxed)) + " events, " +
         std::to_string(total_ns_.load(std::memory_order_relaxed)) + " ns in the recorder, " +
         std::to_string(stack_ns_.load(std::memory_order_relaxed)) +
         " ns of it taking stacks (GPUMEMTRACE_SELF_TIME)";
}

void RecorderCost::clear() {
  events_.store(0, std::memory_order_relaxed);
  total_ns_.store(0, std::memory_order_relaxed);
  stack_ns_.store(0, std::memory_order_relaxed);
}

}  // namespace gmt::interpose
