// SPDX-License-Identifier: Apache-2.0
// PyTorch's caching allocator as torch_allocator.h models it: blocks taken best fit, split and
// merged within their segments.
#include "tests/bench/synthetic_trace/torch_allocator.h"

#include <iterator>
#include <stdexcept>

namespace gmt::bench {

TorchAllocator::Taken TorchAllocator::allocate(uint64_t bytes) {
  const uint64_t size =
      bytes < kMinBlock ? kMinBlock : (bytes + kMinBlock - 1) / kMinBlock * kMinBlock;
  const bool small = size <= kSmallSize;
  Taken t;
  const auto fit = free_.lower_bound({{small, size}, 0});
  if (fit != free_.end() && fit->first.first == small) {
    t.address = fit->second;
    free_.erase(fit);
  } else {
    t.segment_size = small                   ? kSmallSegment
                     : size < kMinLargeAlloc ? kLargeSegment
                                             : (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
    t.segment = t.address = next_segment_;
    next_segment_ += t.segment_size;
    reserved_ += t.segment_size;
    blocks_[t.address] = Block{t.segment_size, t.address, 0, false, small};
  }
  Block& b = blocks_.at(t.address);
  const uint64_t rest = b.size - size;
  if (small ? rest >= kMinBlock : rest > kSmallSize) {
    blocks_[t.address + size] = Block{rest, b.segment, 0, false, small};
    free_.insert({{small, rest}, t.address + size});
    b.size = size;
  }
  b.allocated = true;
  b.requested = bytes;
  return t;
}

uint64_t TorchAllocator::free(uint64_t address) {
  auto it = blocks_.find(address);
  if (it == blocks_.end() || !it->second.allocated) {
    throw std::logic_error("synthetic_trace: a free of no block in use");
  }
  const uint64_t requested = it->second.requested;
  it->second.allocated = false;
  const auto next = std::next(it);
  if (next != blocks_.end() && !next->second.allocated &&
      next->second.segment == it->second.segment) {
    free_.erase({{next->second.small, next->second.size}, next->first});
    it->second.size += next->second.size;
    blocks_.erase(next);
  }
  if (it != blocks_.begin()) {
    const auto prev = std::prev(it);
    if (!prev->second.allocated && prev->second.segment == it->second.segment) {
      free_.erase({{prev->second.small, prev->second.size}, prev->first});
      prev->second.size += it->second.size;
      blocks_.erase(it);
      it = prev;
    }
  }
  free_.insert({{it->second.small, it->second.size}, it->first});
  return requested;
}

}  // namespace gmt::bench
