// SPDX-License-Identifier: Apache-2.0
// What a bounded trace's checkpoint carries: every allocation live now, with its Alloc record's
// fields, every block and segment the caching allocators reported live (LiveBlocks), the VMM
// mappings and handle references that keep physical memory alive (LiveVmm), and the phases open
// (LivePhases). Kept only when the trace is bounded (GPUMEMTRACE_MAX_SIZE), by the writer's
// checkpoint thread (LiveFolder), which applies the records read back from the file in time
// order, so that a checkpoint's live set is exactly the records before its time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "format/records.h"
#include "interpose/record/live_size_table.h"

namespace gmt::interpose {

// The key an allocation is kept under, and the key a free takes: addresses, VMM handles, arrays
// and reservations are separate name spaces.
uint64_t live_key(format::MemoryKind kind, uint64_t address);
uint64_t live_key_freed_by(format::Api api, uint64_t address);

// The caching allocators' live blocks and segments, per allocator and device, from their Block
// records: a block from kAlloc until kFreeCompleted (with its kFreeRequested kept once the user
// freed it), a segment from kSegmentAlloc until kSegmentFree, a mapped range from kSegmentMap
// until kSegmentUnmap (trimmed, or split in two, where only part of it is unmapped).
class LiveBlocks {
 public:
  void apply(const format::BlockRecord& r);
  // Whether the block a kFreeRequested or kFreeCompleted names is here.
  bool holds(const format::BlockRecord& r) const;

  // Calls `visit(record)` with the Block records that rebuild what is live, each with the time
  // it was written: every pool's segments and mapped ranges, then each block's kAlloc (and its
  // kFreeRequested), by pool and highest address first (blocks_in_order).
  template <class Visit>
  void for_each(Visit visit) const {
    for_each_extent(visit);
    std::vector<BlockRef> blocks;
    collect_blocks(blocks);
    visit_in_order(blocks, visit);
  }
  // Segments and mapped ranges, the extents the blocks lie in.
  template <class Visit>
  void for_each_extent(Visit visit) const {
    for (const Pool& p : pools_) {
      p.segments.for_each(visit);
      for (const auto& [address, range] : p.maps) visit(range);
    }
  }
  // A live block's records: its kAlloc, and its kFreeRequested or null.
  struct BlockRef {
    const format::BlockRecord* alloc;
    const format::BlockRecord* request;
  };
  // Appends this set's live blocks to `out`, in no order (visit_in_order() sorts them).
  void collect_blocks(std::vector<BlockRef>& out) const;
  // Calls `visit` with the blocks' records by pool, highest address first: a reader that
  // rebuilds a block's extent from the blocks above it (PyTorch reports the sizes asked for, not
  // the blocks') has them all by then.
  template <class Visit>
  static void visit_in_order(std::vector<BlockRef>& blocks, Visit visit) {
    sort_blocks(blocks);
    for (const BlockRef& b : blocks) {
      visit(*b.alloc);
      if (b.request != nullptr) visit(*b.request);
    }
  }
  // How many records for_each() gives.
  std::size_t size() const;
  void clear() { pools_.clear(); }

 private:
  struct Block {
    format::BlockRecord alloc;
    format::BlockRecord request;  // the kFreeRequested, when `requested`
    bool requested = false;
  };
  struct Pool {
    uint32_t allocator = 0;
    int32_t device = -1;
    LiveTable<Block> blocks;                       // by address
    LiveTable<format::BlockRecord> segments;       // by address
    std::map<uint64_t, format::BlockRecord> maps;  // by first byte; never overlapping
  };
  Pool& pool(uint32_t allocator, int32_t device);
  const Pool* find_pool(uint32_t allocator, int32_t device) const;
  static void sort_blocks(std::vector<BlockRef>& blocks);
  static void unmap(Pool& p, uint64_t address, uint64_t size);

  std::vector<Pool> pools_;  // few: one per allocator and device
};

// What keeps VMM physical memory alive beyond its handle's Alloc record: its mappings, and the
// references to the handle (its creation's, one more per cuMemRetainAllocationHandle, one less
// per cuMemRelease). The memory goes when neither is left, as the analyzer replays it: NCCL and
// others release a handle right after mapping it, and the mapping keeps the memory.
class LiveVmm {
 public:
  void created(uint64_t handle) { handles_[handle] = Refs{}; }
  void apply(const format::MapRecord& r);
  void apply(const format::RetainHandleRecord& r);
  // cuMemRelease: whether the handle's memory goes now (false while it is mapped or retained).
  bool released(uint64_t handle);
  // cuMemUnmap: every mapping that starts in the range ends; calls `gone(handle)` for each handle
  // whose memory goes with it.
  template <class Gone>
  void apply(const format::UnmapRecord& r, Gone gone) {
    const uint64_t end = r.address + r.size;
    for (auto it = maps_.lower_bound(r.address); it != maps_.end() && it->first < end;) {
      const uint64_t handle = it->second.handle;
      it = maps_.erase(it);
      const auto refs = handles_.find(handle);
      if (refs == handles_.end() || refs->second.mappings == 0) continue;
      if (--refs->second.mappings == 0 && refs->second.references == 0) {
        handles_.erase(refs);
        gone(handle);
      }
    }
  }
  // Calls `map(record)` for each mapping, then `retained(handle)` once for each reference to a
  // handle beyond its creation's, then `released(handle)` for each released one that its
  // mappings keep.
  template <class Map, class Retained, class Released>
  void for_each(Map map, Retained retained, Released released) const {
    for (const auto& [address, r] : maps_) map(r);
    for (const auto& [handle, refs] : handles_) {
      for (uint32_t extra = 1; extra < refs.references; ++extra) retained(handle);
    }
    for (const auto& [handle, refs] : handles_) {
      if (refs.references == 0) released(handle);
    }
  }
  // How many records for_each() gives.
  std::size_t size() const;
  void clear() {
    handles_.clear();
    maps_.clear();
  }

 private:
  struct Refs {
    uint32_t references = 1;
    uint32_t mappings = 0;
  };
  std::map<uint64_t, Refs> handles_;            // by handle, those created while recording
  std::map<uint64_t, format::MapRecord> maps_;  // by address
};

// The phases open now: each thread's pushed ranges per NVTX domain (outermost first), and the
// ranges started and not yet ended, from their Phase records.
class LivePhases {
 public:
  void apply(const format::PhaseRecord& r);
  // Calls `visit(record)` with the kPush records, each thread's and domain's outermost first,
  // then the kStart records.
  template <class Visit>
  void for_each(Visit visit) const {
    for (const auto& [thread, stack] : pushed_) {
      for (const format::PhaseRecord& r : stack) visit(r);
    }
    for (const auto& [range, r] : started_) visit(r);
  }
  std::size_t size() const;
  void clear() {
    pushed_.clear();
    started_.clear();
  }

 private:
  std::map<std::pair<uint64_t, uint32_t>, std::vector<format::PhaseRecord>> pushed_;  // tid, domain
  std::map<uint64_t, format::PhaseRecord> started_;                                   // by range
};

class LiveSet {
 public:
  void apply(const format::AllocRecord& r);
  void apply(const format::FreeRecord& r);
  void apply(const format::ContextDestroyedRecord& r);
  void apply(const format::BlockRecord& r) { blocks_.apply(r); }
  // A free (not cuMemRelease) in two steps, with one probe: where what it names is (kNowhere
  // when not here), then, the set unchanged meanwhile, the free applied there.
  static constexpr std::size_t kNowhere = LiveTable<format::AllocRecord>::kNowhere;
  std::size_t position(const format::FreeRecord& r) const {
    return table_.position(live_key_freed_by(r.api, r.address));
  }
  void free_at(std::size_t position) { table_.take_at(position); }
  // Whether what a block's free names is here.
  bool holds(const format::BlockRecord& r) const { return blocks_.holds(r); }
  void apply(const format::MapRecord& r) { vmm_.apply(r); }
  void apply(const format::UnmapRecord& r);
  void apply(const format::RetainHandleRecord& r) { vmm_.apply(r); }
  void apply(const format::PhaseRecord& r) { phases_.apply(r); }
  template <class R>
  void apply(const R&) {}  // nothing else changes what is live

  template <class Visit>
  void for_each(Visit visit) const {
    table_.for_each(visit);
  }
  const LiveBlocks& blocks() const { return blocks_; }
  const LiveVmm& vmm() const { return vmm_; }
  const LivePhases& phases() const { return phases_; }
  std::size_t size() const { return table_.size(); }
  void clear() {
    table_.clear();
    blocks_.clear();
    vmm_.clear();
    phases_.clear();
  }

 private:
  LiveTable<format::AllocRecord> table_;
  LiveBlocks blocks_;
  LiveVmm vmm_;
  LivePhases phases_;
};

// Whether a record changes the live set: what the checkpoint thread applies.
template <class R>
constexpr bool changes_live_set() {
  return std::is_same_v<R, format::AllocRecord> || std::is_same_v<R, format::FreeRecord> ||
         std::is_same_v<R, format::ContextDestroyedRecord> ||
         std::is_same_v<R, format::BlockRecord> || std::is_same_v<R, format::MapRecord> ||
         std::is_same_v<R, format::UnmapRecord> || std::is_same_v<R, format::RetainHandleRecord> ||
         std::is_same_v<R, format::PhaseRecord>;
}

}  // namespace gmt::interpose
