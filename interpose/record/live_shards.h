// SPDX-License-Identifier: Apache-2.0
// A bounded trace's live set (LiveSet), split in shards by address, each with its own lock, so
// that threads allocating and freeing at once do not queue on one lock (with one, 16 threads paid
// 1.75 times a lone thread's cost per event). A record is written and applied under its shard's
// lock; a checkpoint takes every shard's lock, so that it still carries exactly what the records
// before its time left live.
//
// An allocation and its free have one key, so they meet in one shard. What links records of
// different keys goes to shard 0: VMM handles, their mappings and references (a handle's memory
// goes when its last mapping does), and the caching allocators' segments and mapped ranges (rare,
// next to their blocks). A context's teardown frees in every shard.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "format/records.h"
#include "interpose/record/live_set.h"

namespace gmt::interpose {

class LiveShards {
 public:
  static constexpr std::size_t kShards = 16;

  struct alignas(64) Shard {
    std::mutex mutex;
    LiveSet set;
    uint64_t last_ns = 0;  // the time of the last record applied to `set`
  };

  // The shard that `r` changes; null for a record that changes every shard.
  Shard* shard_for(const format::AllocRecord& r) {
    return r.kind == format::MemoryKind::kVmmPhysical ? &shards_[0]
                                                      : &by_key(live_key(r.kind, r.address));
  }
  Shard* shard_for(const format::FreeRecord& r) {
    return r.api == format::Api::kCuMemRelease ? &shards_[0]
                                               : &by_key(live_key_freed_by(r.api, r.address));
  }
  Shard* shard_for(const format::BlockRecord& r) {
    switch (static_cast<format::BlockAction>(r.action)) {
      case format::BlockAction::kAlloc:
      case format::BlockAction::kFreeRequested:
      case format::BlockAction::kFreeCompleted:
        return &by_key(r.address);
      default:
        return &shards_[0];
    }
  }
  Shard* shard_for(const format::MapRecord&) { return &shards_[0]; }
  Shard* shard_for(const format::UnmapRecord&) { return &shards_[0]; }
  Shard* shard_for(const format::RetainHandleRecord&) { return &shards_[0]; }
  Shard* shard_for(const format::ContextDestroyedRecord&) { return nullptr; }

  // Every shard's lock, always in one order.
  void lock_all();
  void unlock_all();
  class AllLocked {
   public:
    explicit AllLocked(LiveShards& live) : live_(live) { live_.lock_all(); }
    ~AllLocked() { live_.unlock_all(); }
    AllLocked(const AllLocked&) = delete;
    AllLocked& operator=(const AllLocked&) = delete;

   private:
    LiveShards& live_;
  };

  // The rest is called with every lock held (or in a fork child, which has one thread).
  template <class R>
  void apply_everywhere(const R& r, uint64_t time_ns) {
    for (Shard& s : shards_) {
      s.set.apply(r);
      s.last_ns = time_ns;
    }
  }
  // The time of the last record applied to any shard.
  uint64_t last_ns() const;
  void clear();

  template <class Visit>
  void for_each_allocation(Visit visit) const {
    for (const Shard& s : shards_) s.set.for_each(visit);
  }
  // As LiveBlocks::for_each, over every shard's blocks at once.
  template <class Visit>
  void for_each_block_record(Visit visit) const {
    for (const Shard& s : shards_) s.set.blocks().for_each_extent(visit);
    std::vector<LiveBlocks::BlockRef> blocks;
    for (const Shard& s : shards_) s.set.blocks().collect_blocks(blocks);
    LiveBlocks::visit_in_order(blocks, visit);
  }
  const LiveVmm& vmm() const { return shards_[0].set.vmm(); }

 private:
  Shard& by_key(uint64_t key) {
    return shards_[(key * 0x9E3779B97F4A7C15ull) >> 60];  // the top 4 bits: 16 shards
  }
  static_assert(kShards == 16);

  std::array<Shard, kShards> shards_;
};

}  // namespace gmt::interpose
