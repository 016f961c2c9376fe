// SPDX-License-Identifier: Apache-2.0
// What PyTorch's CUDA caching allocator makes of a request's size before it looks for a block:
// the size rounded (a block is never smaller), the pool it is served from, and the size of the
// segment it takes from CUDA when no cached block fits. Read from c10/cuda/CUDACachingAllocator.cpp
// (DeviceCachingAllocator::round_size, roundup_power2_next_division, get_pool,
// get_allocation_size) and c10/core/AllocatorConfig.cpp (roundup_power2_divisions).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace gmt::analyzer::allocator {

// CUDACachingAllocator.cpp's constants (kLargeBuffer is c10/core/AllocatorConfig.h's).
inline constexpr uint64_t kMinBlockSize = 512;           // every size is a multiple of it
inline constexpr uint64_t kSmallSize = 1ull << 20;       // the small pool's largest request
inline constexpr uint64_t kSmallBuffer = 2ull << 20;     // a small pool segment (and page)
inline constexpr uint64_t kLargeBuffer = 20ull << 20;    // a segment for requests of 1-10 MiB
inline constexpr uint64_t kMinLargeAlloc = 10ull << 20;  // from here a segment fits its request
inline constexpr uint64_t kRoundLarge = 2ull << 20;      // ... rounded up to 2 MiB

// AllocatorConfig.cpp's kRoundUpPowerOfTwoIntervals: [1, 2) MiB (and below), [2, 4) MiB, ...,
// [32 GiB, ...), as format's AllocatorSettingsRecord stores them.
inline constexpr std::size_t kRoundupIntervals = 16;
using RoundupDivisions = std::array<uint64_t, kRoundupIntervals>;

// AllocatorConfig.cpp: roundup_power2_divisions(size): the interval of a size by its highest
// bit, from 1 MiB (2^20), clamped to the first and last.
std::size_t roundup_interval(uint64_t size);

// CUDACachingAllocator.cpp: roundup_power2_next_division: the next of `divisions` equal steps
// of the power-of-two interval holding `size` (a power of two stays as it is).
uint64_t roundup_power2_next_division(uint64_t size, uint64_t divisions);

// CUDACachingAllocator.cpp: round_size: at least 512 bytes; the next power-of-two division
// where the interval has more than one and the size is above 512 bytes times their number;
// else the next multiple of 512.
uint64_t round_size(uint64_t size, const RoundupDivisions& divisions);

// CUDACachingAllocator.cpp: get_pool: rounded sizes up to 1 MiB are the small pool's.
inline bool is_small(uint64_t rounded) {
  return rounded <= kSmallSize;
}

// CUDACachingAllocator.cpp: get_allocation_size: what cudaMalloc is asked for when no cached
// block serves a rounded size: a 2 MiB segment for the small pool, a `large_segment_size`
// (20 MiB unless configured) one below 10 MiB, else the size rounded up to 2 MiB.
uint64_t allocation_size(uint64_t rounded, uint64_t large_segment_size = kLargeBuffer);

}  // namespace gmt::analyzer::allocator
