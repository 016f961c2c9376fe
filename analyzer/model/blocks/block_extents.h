// SPDX-License-Identifier: Apache-2.0
// PyTorch's allocator trace entries give the size its user asked for (a 4-byte scalar, 3 MiB +
// 1000 bytes), while its own figures (memory_allocated(), the snapshot's blocks) count the block
// it handed out: the request rounded up to 512 bytes, or the whole free block it came from when
// what would be left is not worth splitting off. This rebuilds each block's extent from what the
// trace has (its segments, mapped ranges and the other blocks) by the allocator's own rules:
//   - a block starts at the start of a free block, which runs to the next block in use (freed
//     blocks are merged with free neighbours) or to the end of its segment or mapped range;
//   - the rest is split off when at least 512 bytes in the small pool (requests up to 1 MiB) and
//     with expandable segments, more than 1 MiB in the large pool.
// PYTORCH_CUDA_ALLOC_CONF's roundup_power2_divisions and max_split_size_mb change those rules:
// a request is first rounded up to the next division of its power-of-two interval, and a block
// of max_split_size bytes or more (rounded) is never split. The trace gives them as the allocator
// read them (format's AllocatorSettingsRecord); without it, the defaults apply (no divisions, no
// limit).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>

#include "format/records.h"

namespace gmt::analyzer {

class BlockExtents {
 public:
  struct Settings {
    uint64_t max_split_size = UINT64_MAX;
    // By request size: below 2 MiB, [2, 4) MiB, ..., from 32 GiB on (the record's intervals).
    std::array<uint64_t, format::AllocatorSettingsRecord::kIntervals> divisions{};

    static Settings of(const format::AllocatorSettingsRecord& r);
  };

  // Called with (address, new size) for a block in use whose extent a later block showed to end
  // sooner: blocks given out of order (a bounded trace's carried blocks from an older writer), or
  // an allocator configured beyond the rules above.
  using Resize = std::function<void(uint64_t address, uint64_t size)>;

  // A block handed out at `address` for `requested` bytes: the bytes the allocator counts for it.
  uint64_t allocate(uint64_t address, uint64_t requested, const Resize& resize);
  // Follows an event other than kAlloc: segments, mapped ranges, completed frees.
  void follow(const format::BlockRecord& r);
  // The block's free completed: it is merged into the cache, no longer a boundary.
  void release(uint64_t address);
  void add_segment(uint64_t address, uint64_t size);
  void remove_segment(uint64_t address);
  // Expandable segments: pages mapped into (or out of) the allocator's reservation.
  void map(uint64_t address, uint64_t size);
  void unmap(uint64_t address, uint64_t size);

  // Whether an allocator's block events give the sizes asked for, to be rebuilt here (PyTorch's);
  // the others report their blocks' own sizes.
  static bool rebuilt(uint32_t allocator) {
    return allocator == static_cast<uint32_t>(format::BlockAllocator::kPytorch);
  }

  // How many runs of mapped pages there are (adjacent ranges are one run).
  std::size_t mapped_runs() const { return mapped_.size(); }

  // The allocator's settings, from now on (blocks already handed out keep their extents).
  void set(const Settings& settings) { settings_ = settings; }

  // PyTorch's round_size(): what a request takes at least.
  uint64_t rounded(uint64_t requested) const;

 private:
  struct Used {
    uint64_t rounded = 0;
    uint64_t size = 0;
    bool fine_split = false;   // small pool or expandable: split off anything of 512 bytes
    bool never_split = false;  // large pool, not expandable, at least max_split_size
  };
  // The end of the segment or mapped range holding `address`, and whether it is mapped
  // (expandable); 0 when none holds it.
  std::pair<uint64_t, bool> container_end(uint64_t address) const;
  uint64_t size_in(uint64_t free_bytes, const Used& u) const;

  Settings settings_;
  std::map<uint64_t, Used> used_;          // blocks in use or freed with streams pending
  std::map<uint64_t, uint64_t> segments_;  // by address: size
  std::map<uint64_t, uint64_t> mapped_;    // by address: size; adjacent ranges merged
};

}  // namespace gmt::analyzer
