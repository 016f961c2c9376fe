// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/allocator/request_size.h"

#include <algorithm>
#include <bit>

namespace gmt::analyzer::allocator {

std::size_t roundup_interval(uint64_t size) {
  // AllocatorConfig.cpp: roundup_power2_divisions: log2(size) - log2(1 MiB), clamped.
  const int log2 = std::bit_width(size) - 1;
  const int last = static_cast<int>(kRoundupIntervals) - 1;
  return static_cast<std::size_t>(std::clamp(log2 - 20, 0, last));
}

uint64_t roundup_power2_next_division(uint64_t size, uint64_t divisions) {
  if (std::has_single_bit(size)) return size;
  const uint64_t floor = std::bit_floor(size);
  // The step is the interval's floor over the divisions' highest power of two (the
  // configuration only lets powers of two through).
  const uint64_t step = floor >> (std::bit_width(divisions) - 1);
  if (step == 0) return floor << 1;
  const uint64_t below = size & ~(step - 1);
  return below == size ? size : below + step;
}

uint64_t round_size(uint64_t size, const RoundupDivisions& divisions) {
  if (size < kMinBlockSize) return kMinBlockSize;
  // The divisions are looked up by the size asked for, before any rounding.
  const uint64_t d = divisions[roundup_interval(size)];
  if (d > 1 && size > kMinBlockSize * d) return roundup_power2_next_division(size, d);
  return (size + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

uint64_t allocation_size(uint64_t rounded, uint64_t large_segment_size) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return large_segment_size;
  return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

}  // namespace gmt::analyzer::allocator
