// SPDX-License-Identifier: Apache-2.0
// A simulated caching allocator, shaped like PyTorch's: it takes segments from the CUDA runtime
// (2 MiB for requests up to 1 MiB, 20 MiB up to 10 MiB, larger ones rounded up to 2 MiB), splits
// them into blocks (sizes rounded up to 512 bytes), keeps freed blocks cached for reuse (best
// fit, merged with their free neighbours) and never gives a segment back. It reports every
// block event through gpumemtrace.h's gpumemtrace_framework_block(), as a framework's shim would:
// with the blocks' own sizes as allocator "other" (kBlockSizes), or as PyTorch's trace tracker
// does (kAsPytorch): allocator "pytorch", and a block's events give the size asked for, while
// allocated_bytes() counts the blocks (torch.cuda.memory_allocated()); and when the runtime
// refuses a segment it releases its wholly free segments and asks once more before it reports
// its OOM, as PyTorch does (release_cached_blocks()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <utility>

namespace sim {

class CachingAllocator {
 public:
  enum class Reporting { kBlockSizes, kAsPytorch };
  explicit CachingAllocator(int device, Reporting reporting = Reporting::kBlockSizes)
      : device_(device), reporting_(reporting) {}
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes`, for `stream`; nullptr when the runtime has no more memory.
  void* allocate(std::size_t bytes, uint64_t stream = 0);
  void free(void* p);

  // What the allocator's users hold (live blocks) and what it holds from CUDA (its segments),
  // as torch.cuda.memory_allocated() and memory_reserved() say.
  uint64_t allocated_bytes() const { return allocated_; }
  uint64_t reserved_bytes() const { return reserved_; }
  // The most each ever was, as torch.cuda.max_memory_allocated() and max_memory_reserved() say.
  uint64_t max_allocated_bytes() const { return max_allocated_; }
  uint64_t max_reserved_bytes() const { return max_reserved_; }
  // What releasing the cache before a retry gave back, over the allocator's life.
  uint64_t released_bytes() const { return released_; }
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
    std::size_t requested = 0;  // what the block's user asked for, while allocated
  };
  // Free blocks by (pool, size, address): best fit is the first of the right pool at or above
  // the size.
  using FreeKey = std::pair<std::pair<bool, std::size_t>, uintptr_t>;

  // A new segment of `bytes` from the runtime; 0 when it has no more.
  uintptr_t new_segment(std::size_t bytes, uint64_t stream);
  // Gives every wholly free segment back to the runtime.
  void release_free_segments();
  void insert_free(uintptr_t address);
  void erase_free(uintptr_t address);

  void report(uint32_t action, uintptr_t address, std::size_t size, uint64_t stream) const;
  // The size a block event gives for `b`.
  std::size_t reported(const Block& b) const {
    return reporting_ == Reporting::kAsPytorch ? b.requested : b.size;
  }

  int device_;
  Reporting reporting_;
  std::map<uintptr_t, Block> blocks_;  // every block, by address
  std::set<FreeKey> free_;
  uint64_t allocated_ = 0;
  uint64_t reserved_ = 0;
  uint64_t max_allocated_ = 0;
  uint64_t max_reserved_ = 0;
  uint64_t released_ = 0;
  std::size_t segments_ = 0;
};

}  // namespace sim
