// SPDX-License-Identifier: Apache-2.0
#include "tests/workloads/caching_allocator.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <iterator>

#include "include/gpumemtrace.h"

namespace sim {

namespace {

constexpr std::size_t kMiB = 1024 * 1024;
constexpr std::size_t kMinBlock = 512;
constexpr std::size_t kSmallSize = 1 * kMiB;  // requests up to this come from small segments
constexpr std::size_t kSmallSegment = 2 * kMiB;
constexpr std::size_t kLargeSegment = 20 * kMiB;
constexpr std::size_t kMinLargeAlloc = 10 * kMiB;  // above: a segment of its own size
constexpr std::size_t kRoundLarge = 2 * kMiB;

}  // namespace

void CachingAllocator::report(uint32_t action, uintptr_t address, std::size_t size,
                              uint64_t stream) const {
  const uint32_t allocator = reporting_ == Reporting::kAsPytorch ? GPUMEMTRACE_ALLOCATOR_PYTORCH
                                                                 : GPUMEMTRACE_ALLOCATOR_OTHER;
  gpumemtrace_framework_block(allocator, action, device_, address, size, stream);
}

std::size_t CachingAllocator::round_size(std::size_t bytes) {
  if (bytes < kMinBlock) return kMinBlock;
  return (bytes + kMinBlock - 1) / kMinBlock * kMinBlock;
}

std::size_t CachingAllocator::segment_size(std::size_t rounded) {
  if (rounded <= kSmallSize) return kSmallSegment;
  if (rounded < kMinLargeAlloc) return kLargeSegment;
  return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

void CachingAllocator::insert_free(uintptr_t address) {
  const Block& b = blocks_.at(address);
  free_.insert({{b.small, b.size}, address});
}

void CachingAllocator::erase_free(uintptr_t address) {
  const Block& b = blocks_.at(address);
  free_.erase({{b.small, b.size}, address});
}

void* CachingAllocator::allocate(std::size_t bytes, uint64_t stream) {
  const std::size_t size = round_size(bytes);
  const bool small = size <= kSmallSize;
  uintptr_t address = 0;
  const auto fit = free_.lower_bound({{small, size}, 0});
  if (fit != free_.end() && fit->first.first == small) {
    address = fit->second;
    free_.erase(fit);
  } else {
    const std::size_t segment = segment_size(size);
    address = new_segment(segment, stream);
    if (address == 0 && reporting_ == Reporting::kAsPytorch) {
      release_free_segments();
      address = new_segment(segment, stream);
    }
    if (address == 0) {
      report(GPUMEMTRACE_BLOCK_OOM, 0, size, stream);
      return nullptr;
    }
    blocks_[address] = Block{segment, address, segment, false, small, stream};
  }
  Block& b = blocks_.at(address);
  // Split off what is left when it is worth a block: any remainder in small segments, more
  // than 1 MiB in large ones (PyTorch's rule).
  const std::size_t rest = b.size - size;
  if (small ? rest >= kMinBlock : rest > kSmallSize) {
    blocks_[address + size] = Block{rest, b.segment, b.segment_size, false, small, stream};
    b.size = size;
    insert_free(address + size);
  }
  b.allocated = true;
  b.requested = bytes;
  b.stream = stream;
  allocated_ += b.size;
  max_allocated_ = std::max(max_allocated_, allocated_);
  // PyTorch's trace entries carry the size asked for (orig_size), not the block's.
  report(GPUMEMTRACE_BLOCK_ALLOC, address, reported(b), stream);
  return reinterpret_cast<void*>(address);
}

uintptr_t CachingAllocator::new_segment(std::size_t bytes, uint64_t stream) {
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) return 0;
  const auto address = reinterpret_cast<uintptr_t>(p);
  reserved_ += bytes;
  max_reserved_ = std::max(max_reserved_, reserved_);
  ++segments_;
  report(GPUMEMTRACE_BLOCK_SEGMENT_ALLOC, address, bytes, stream);
  return address;
}

void CachingAllocator::release_free_segments() {
  for (auto it = blocks_.begin(); it != blocks_.end();) {
    const Block& b = it->second;
    if (b.allocated || it->first != b.segment || b.size != b.segment_size) {
      ++it;
      continue;
    }
    erase_free(it->first);
    // PyTorch records the segment's free before it gives it back (release_block()).
    report(GPUMEMTRACE_BLOCK_SEGMENT_FREE, it->first, b.size, b.stream);
    cudaFree(reinterpret_cast<void*>(it->first));
    reserved_ -= b.size;
    released_ += b.size;
    it = blocks_.erase(it);
  }
}

void CachingAllocator::free(void* p) {
  if (p == nullptr) return;
  auto it = blocks_.find(reinterpret_cast<uintptr_t>(p));
  if (it == blocks_.end() || !it->second.allocated) return;
  uintptr_t address = it->first;
  Block& b = it->second;
  const std::size_t freed = reported(b);
  report(GPUMEMTRACE_BLOCK_FREE_REQUESTED, address, freed, b.stream);
  allocated_ -= b.size;
  b.allocated = false;
  const uint64_t stream = b.stream;
  // Merged with its free neighbours in the same segment.
  auto next = std::next(it);
  if (next != blocks_.end() && !next->second.allocated && next->second.segment == b.segment) {
    erase_free(next->first);
    b.size += next->second.size;
    blocks_.erase(next);
  }
  if (it != blocks_.begin()) {
    auto prev = std::prev(it);
    if (!prev->second.allocated && prev->second.segment == b.segment) {
      erase_free(prev->first);
      prev->second.size += b.size;
      blocks_.erase(it);
      it = prev;
    }
  }
  insert_free(it->first);
  report(GPUMEMTRACE_BLOCK_FREE_COMPLETED, address, freed, stream);
}

}  // namespace sim
