// SPDX-License-Identifier: Apache-2.0
// The weighted stacks the profile exports (folded, speedscope, pprof) share: what was live at
// each device's peak, and what was never freed, one entry per site, under pseudo-frames naming
// the device (and the leak class), so that one flame graph keeps the devices apart.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/model/trace_summary.h"
#include "analyzer/report/frames/frame_policy.h"
#include "analyzer/report/frames/stack_frames.h"

namespace gmt::analyzer {

// The frame that stands for an allocation recorded without a stack.
inline constexpr const char* kNoStackFrame = "(no stack recorded)";

struct WeightedStack {
  std::vector<std::string> roots;  // pseudo-frames, outermost first: "device 0", "unfreed"
  int device = -1;
  uint32_t stack = 0;  // StackRecord id; 0: recorded without a stack
  uint64_t bytes = 0;
  uint64_t count = 0;
  // What stands for the frames when there are none: a caching allocator's free cache is named
  // as such, anything else as recorded without a stack.
  std::string no_stack_frame = kNoStackFrame;
};

// "device 0", or "no device" for host memory and allocations of no known device.
std::string device_root(int device);

// Every site live at each device's peak (device-resident bytes): per device, they add up to its
// peak exactly.
std::vector<WeightedStack> peak_stacks(const TraceSummary& trace);

// Every group never freed, of every class but `teardown` (released by its context's end, so not
// live at the end): they add up to the bytes of every kind live at the end of the trace.
std::vector<WeightedStack> leak_stacks(const TraceSummary& trace);

// The symbolized frames of every stack in `stacks` (leaf first), as a flame graph shows them
// (flame_frames: with FrameMode::kUser, the `via` frame under the first user frame).
ResolvedStacks resolve_weighted(TraceSummary& trace, const std::vector<WeightedStack>& stacks,
                                FrameMode mode);

// A frame's name for a flame graph: the function, with the module's file name when there is no
// source file to tell apart two functions of one name ("cudaMalloc (libcudart.so.13)"); an
// unsymbolized frame already names its module ("libfoo.so+0x1a2b").
std::string frame_label(const SiteFrame& frame);

}  // namespace gmt::analyzer
