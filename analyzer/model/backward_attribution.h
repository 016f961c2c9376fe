// SPDX-License-Identifier: Apache-2.0
// PyTorch runs backward() on native threads of its autograd engine (one per device), which hold
// no Python frames: a gradient or a DDP bucket allocated there has a stack of c10 and libtorch
// frames only, and a site that names no line of the user's. The thread that called backward()
// waits in it meanwhile, and its own allocations there (the root gradient) carry the Python
// frames of the call. A block allocated on a thread with no Python frames while another thread
// is in backward() is counted under a stack made of its own native frames and that thread's
// Python frames from the user's call outward, marked by a frame of kind "attribution" between
// the two (TraceSummary::kAttributionCode); so is a driver allocation such a thread makes. The
// other thread is in backward() from its block allocated in it to its next block allocated
// outside it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {

class BackwardAttribution {
 public:
  // The stack to count a block that `thread` allocated with `stack` under: its own, or the
  // attributed one. Every block allocation is told: the caller's own blocks show its calls in
  // and out of backward() (driver allocations are not needed for that, and stay off the replay's
  // hot path).
  uint32_t stack_for(TraceSummary& summary, uint64_t thread, uint32_t stack);
  // Whether a thread is in backward() now.
  bool in_backward() const { return caller_.has_value(); }
  // The stack to count a driver allocation (cuBLAS's workspace, made on the autograd thread that
  // first runs a matmul's backward) under: as a block's, but it moves no thread in or out of
  // backward().
  // Inline: the replay asks for every driver allocation, and no thread is in backward() for most.
  uint32_t driver_stack_for(TraceSummary& summary, uint64_t thread, uint32_t stack) {
    return caller_ ? driver_stack_in_backward(summary, thread, stack) : stack;
  }

 private:
  enum class Python : uint8_t { kNone, kOutsideBackward, kInBackward };
  Python python_of(const TraceSummary& summary, uint32_t stack);
  uint32_t driver_stack_in_backward(TraceSummary& summary, uint64_t thread, uint32_t stack);
  uint32_t attributed(TraceSummary& summary, uint32_t stack, uint32_t caller);

  struct Caller {
    uint64_t thread;
    uint32_t stack;
  };
  std::unordered_map<uint32_t, Python> python_;                   // by stack id
  std::optional<Caller> caller_;                                  // the thread in backward() now
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> attributed_;  // (stack, caller's): id
};

}  // namespace gmt::analyzer
