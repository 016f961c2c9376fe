// SPDX-License-Identifier: Apache-2.0
// What the caching allocator model does not reproduce of PyTorch's allocator, said as values a
// report can print ("not modelled: ..."), so that a prediction is never shown as exact where the
// replay took a shortcut. Some gaps are always there (the model's inputs cannot carry them);
// the others are counted when a replay meets them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gmt::analyzer::allocator {

enum class Gap : uint8_t {
  // record_stream(): a block used on other streams goes back to the cache only once events
  // recorded on them complete (CUDACachingAllocator.cpp: free, insert_events, process_events);
  // when is not in the trace. The model frees such a block at once.
  kCrossStreamUse,
  // A free of a request the model does not hold (a trace that began mid-run, a bounded trace's
  // lost records): ignored.
  kUnknownFree,
  // Memory pools the model does not follow: torch.cuda.MemPool with its own allocator,
  // use_on_oom pools (try_mempool_fallback) and no_split pools.
  kUserMemPool,
  // Segment addresses: PyTorch orders equal-size free blocks by address, which cudaMalloc
  // chooses; without the caller's addresses the model gives each segment a higher one.
  kSyntheticAddresses,
  // A failed cudaMalloc: the model fails one when the reserved bytes would pass a capacity,
  // while the device may also refuse for its own fragmentation or other processes' memory.
  kCapacityIsOneNumber,
  // FreeCudaMemoryCallbacksRegistry (CUDA IPC's collection of tensors other processes let
  // go) may free memory before a retry; the model runs no callbacks.
  kFreeMemoryCallbacks,
  // Freeable CUDA graph pools are released in PyTorch's hash-map order, in the model by pool id.
  kFreeablePoolOrder,
  // Which requests a capture's private pool serves: PyTorch asks the capture's filter (the
  // capturing stream, or the thread for use_mem_pool); the model matches the stream given.
  kCaptureFilter,
};

inline constexpr std::size_t kGapCount = 8;

// One line for a report.
std::string_view describe(Gap gap);

// Whether a gap is inherent in the model's inputs (always reported) rather than met.
bool always_present(Gap gap);

// How often each gap was met in a replay.
class Gaps {
 public:
  void note(Gap gap) { ++counts_[static_cast<std::size_t>(gap)]; }
  uint64_t count(Gap gap) const { return counts_[static_cast<std::size_t>(gap)]; }
  uint64_t& count(Gap gap) { return counts_[static_cast<std::size_t>(gap)]; }
  // Met at least once, or always present.
  bool present(Gap gap) const { return count(gap) > 0 || always_present(gap); }

 private:
  std::array<uint64_t, kGapCount> counts_{};
};

}  // namespace gmt::analyzer::allocator
