// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/allocator/model_gaps.h"

namespace gmt::analyzer::allocator {

std::string_view describe(Gap gap) {
  switch (gap) {
    case Gap::kCrossStreamUse:
      return "not modelled: blocks used on other streams (record_stream) are freed at once, "
             "not when those streams' events complete";
    case Gap::kUnknownFree:
      return "not modelled: frees of blocks the replay never saw allocated";
    case Gap::kUserMemPool:
      return "not modelled: torch.cuda.MemPool with its own allocator, use_on_oom or no_split";
    case Gap::kSyntheticAddresses:
      return "not modelled: cudaMalloc's addresses (equal-size free blocks are ordered by "
             "address in PyTorch)";
    case Gap::kCapacityIsOneNumber:
      return "not modelled: a cudaMalloc failing for any cause but the capacity given";
    case Gap::kFreeMemoryCallbacks:
      return "not modelled: free-memory callbacks (CUDA IPC) before a retry";
    case Gap::kFreeablePoolOrder:
      return "not modelled: the order PyTorch releases freeable CUDA graph pools in";
    case Gap::kCaptureFilter:
      return "not modelled: a capture's own filter of which requests its pool serves (the "
             "stream given stands for it)";
  }
  return "not modelled: unknown";
}

bool always_present(Gap gap) {
  return gap == Gap::kCapacityIsOneNumber || gap == Gap::kFreeMemoryCallbacks;
}

}  // namespace gmt::analyzer::allocator
