// SPDX-License-Identifier: Apache-2.0
// Replays a caching allocator's block events (BlockRecord, format 4.2) beside the driver's
// allocations: per allocator and device, the live blocks (what its users hold: the framework's
// allocated bytes) and the segments it reported (its reserved bytes), and the blocks' sites, for
// telling a leak behind the cache from the cache.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyzer/model/blocks/block_extents.h"
#include "analyzer/model/blocks/extents_by_device.h"
#include "analyzer/model/containers/flat_hash_map.h"
#include "analyzer/model/trace_summary.h"
#include "format/records.h"

namespace gmt::analyzer {

class BlockReplay {
 public:
  BlockReplay() = default;
  // Pools point into extents_.
  BlockReplay(const BlockReplay&) = delete;
  BlockReplay& operator=(const BlockReplay&) = delete;

  // Applies one event.
  // `captured`: a kAlloc a CUDA graph's capture made (RoleTracker::captured()).
  void on(const format::BlockRecord& r, bool captured = false);
  // A CUDA graph's capture took the segment at `address` (a kSegmentAlloc just replayed), or a
  // block in the segment that holds `address` (a kAlloc): the segment is the graph's private
  // pool's until it is freed. PyTorch serves a capture only from its pool, whose segments may
  // have been taken before the capture (CUDA graph trees warm up in the pool first). Where a
  // block the capture did not make lives in such a segment, the segment is not the graph's
  // alone (an allocator that shares its segments): its free bytes stay the cache's.
  void graph_segment(uint32_t allocator, int device, uint64_t address);
  // An allocator's settings: its blocks from now on, on every device, are rebuilt by them.
  void on(const format::AllocatorSettingsRecord& r);

  // Whether any block event was seen for the device, and its allocators' figures now.
  bool has_blocks(int device) const;
  // How many blocks the device's allocators hand out now.
  std::size_t live_blocks(int device) const;
  uint64_t allocated_bytes(int device) const;
  uint64_t reserved_bytes(int device) const;

  // Every block site's live bytes and count, as the `samples`-th sample.
  void take_sample(std::size_t samples);
  // Calls `fn(address)` for every segment the allocators hold now.
  template <class Fn>
  void for_each_live_segment(Fn&& fn) const {
    for (const auto& [key, pool] : pools_) {
      for (const auto& [address, size] : pool.segments) fn(address);
    }
  }
  // Calls `fn(address, size, stack)` for every block the device's allocators hand out now.
  template <class Fn>
  void for_each_live_block(int device, Fn&& fn) const {
    for (const auto& [key, pool] : pools_) {
      if (key.second != device) continue;
      pool.blocks.for_each([&](uint64_t address, const Block& block) {
        fn(address, block.size, sites_[block.site].stack);
      });
    }
  }
  // A reported segment's driver allocation: the stack that made it and its size, or none.
  using SegmentLookup =
      std::function<std::optional<std::pair<uint32_t, uint64_t>>(uint64_t address)>;
  // What `device` holds now, by row: `driver` (the device-resident bytes of every driver site
  // on it, by stack) with the segments of each allocator that reported blocks there replaced by
  // its live blocks by site and one row for its free cache (PeakSite::cache), largest first; the
  // rows add up to what `driver` did. An allocator whose segments `segment` does not find all
  // (expandable segments), or whose blocks are more than they, keeps its segments' rows. Empty
  // when no allocator's rows replaced any.
  std::vector<PeakSite> rows_on(int device, std::vector<PeakSite> driver,
                                const SegmentLookup& segment) const;
  // An allocator's free bytes in the segments it reported (not in a live block), and the
  // largest free range in any one of them.
  std::pair<uint64_t, uint64_t> free_space(uint32_t allocator, int device) const;

  // The block sites and the allocators' figures, into the summary.
  void finish(TraceSummary& summary) const;

 private:
  struct Block {
    uint64_t size = 0;
    uint32_t site = 0;      // index in sites_
    bool captured = false;  // made by a CUDA graph's capture
  };
  struct Pool {
    FlatHashMap<uint64_t, Block, AddressHash> blocks;  // live blocks by address
    std::unordered_map<uint64_t, uint64_t> segments;   // reported segments by address: size
    std::map<uint64_t, uint64_t> graph_segments;       // of them, graphs' private pools'
    AllocatorUsage usage;
    // PyTorch reports the sizes asked for; the blocks' own come from here (extents_'s).
    BlockExtents* extents = nullptr;
  };
  Pool& pool(uint32_t allocator, int device);
  uint32_t site(uint32_t allocator, int device, uint32_t stack);
  void end_block(Pool& p, uint64_t address);
  void resize_block(Pool& p, uint64_t address, uint64_t size);
  uint64_t block_size(Pool& p, const format::BlockRecord& r);

  std::map<std::pair<uint32_t, int>, Pool> pools_;  // by (allocator, device)
  // The pool of the last event: a program's events nearly all go to one (std::map nodes do not
  // move).
  Pool* last_pool_ = nullptr;
  ExtentsByDevice extents_;
  std::vector<BlockSiteStats> sites_;
  FlatHashMap<uint64_t, uint32_t, MixedHash> site_indices_;  // by block_site_key
};

}  // namespace gmt::analyzer
