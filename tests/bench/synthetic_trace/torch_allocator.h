// SPDX-License-Identifier: Apache-2.0
// The caching allocator behind --framework-blocks' blocks, shaped like PyTorch's so that the
// blocks, their segments and their addresses are those the analyzer meets in a real trace.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <utility>

namespace gmt::bench {

// --framework-blocks: PyTorch's caching allocator as tests/workloads/caching_allocator.cpp
// models it (and the analyzer's block extents expect): segments of 2 MiB for requests up to
// 1 MiB, 20 MiB below 10 MiB, larger ones their own size rounded up to 2 MiB; blocks rounded up
// to 512 bytes, taken best fit from the free blocks of their pool, the rest split off when worth
// a block (anything in the small pool, more than 1 MiB in the large one), merged with their free
// neighbours when freed; segments never given back. It hands out addresses; the generator
// writes the records.
class TorchAllocator {
 public:
  static constexpr uint64_t kMiB = 1024 * 1024;

  struct Taken {
    uint64_t address = 0;
    uint64_t segment = 0;  // a segment taken from CUDA for this block (cudaMalloc), else 0
    uint64_t segment_size = 0;
  };

  explicit TorchAllocator(uint64_t base) : next_segment_(base) {}

  Taken allocate(uint64_t bytes);

  // Frees the block at `address`, in use; returns the size its events give: the size asked for.
  uint64_t free(uint64_t address);

  uint64_t reserved() const { return reserved_; }

 private:
  static constexpr uint64_t kMinBlock = 512;
  static constexpr uint64_t kSmallSize = 1 * kMiB;
  static constexpr uint64_t kSmallSegment = 2 * kMiB;
  static constexpr uint64_t kLargeSegment = 20 * kMiB;
  static constexpr uint64_t kMinLargeAlloc = 10 * kMiB;
  static constexpr uint64_t kRoundLarge = 2 * kMiB;

  struct Block {
    uint64_t size;
    uint64_t segment;  // the address of its segment
    uint64_t requested;
    bool allocated;
    bool small;
  };
  std::map<uint64_t, Block> blocks_;  // every block, by address
  // Free blocks by (pool, size, address): best fit is the first of its pool at or above a size.
  std::set<std::pair<std::pair<bool, uint64_t>, uint64_t>> free_;
  uint64_t next_segment_;
  uint64_t reserved_ = 0;
};

}  // namespace gmt::bench
