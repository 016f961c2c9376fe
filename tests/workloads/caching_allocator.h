// SPDX-License-Identifier: Apache-2.0
// A simulated caching allocator, shaped like PyTorch's: it takes segments from the CUDA runtime
// (2 MiB for requests up to 1 MiB, 20 MiB up to 10 MiB, larger ones rounded up to 2 MiB), splits
// them into blocks (sizes rounded up to 512 bytes), keeps freed blocks cached for reuse (best
// fit, merged with their free neighbours) and never gives a segment back. It reports every
// block event through gpumemtrace.h's gpumemtrace_framework_block(), as a framework's shim would.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <utility>

namespace sim {

class CachingAllocator {
 public:
  explicit CachingAllocator(int device) : device_(device) {}
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes`, for `stream`; nullptr when the runtime has no more memory.
  void* allocate(std::size_t bytes, uint64_t stream = 0);
  void free(void* p);

  // What the allocator's users hold (live blocks) and what it holds from CUDA (its segments),
  // as torch.cuda.memory_allocated() and memory_reserved() say.
  uint64_t allocated_bytes() const { return allocated_; }
  uint64_t reserved_bytes() const { return reserved_; }
  std::size_t segments() const { return segments_; }

  static std::size_t round_size(std::size_t bytes);
  static std::size_t segment_size(std::size_t rounded);

 private:
  struct Block {
    std::size_t size = 0;
    uintptr_t segment = 0;  // the address of the segment it is in
    std::size_t segment_size = 0;
    bool allocated = false;
    bool small = false;
    uint64_t stream = 0;
  };
  // Free blocks by (pool, size, address): best fit is the first of the right pool at or above
  // the size.
  using FreeKey = std::pair<std::pair<bool, std::size_t>, uintptr_t>;

  void insert_free(uintptr_t address);
  void erase_free(uintptr_t address);

  int device_;
  std::map<uintptr_t, Block> blocks_;  // every block, by address
  std::set<FreeKey> free_;
  uint64_t allocated_ = 0;
  uint64_t reserved_ = 0;
  std::size_t segments_ = 0;
};

}  // namespace sim
