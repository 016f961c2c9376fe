// SPDX-License-Identifier: Apache-2.0
// A bounded trace's live set (LiveSet), split in shards with a lock each, one shard per writing
// thread (threads take them in turn), so that a thread's allocations and frees touch only its own
// shard's lock and table: no cache line of theirs goes from core to core, and threads do not queue
// on one lock. (With one lock for the set, 16 threads paid 99 times a lone thread's CPU per event
// on a 16-core machine; with 16 shards by address, 9 times.) The locks are spin locks
// (SpinLock): a shard's own thread nearly always finds its lock free. A record is written and
// applied under the lock of the shard that holds what it changes; a checkpoint takes every shard's
// lock, so that it still carries exactly what the records before its time left live.
//
// - An allocation, and a caching allocator's block, goes to the allocating thread's shard, whose
//   number is noted under the allocation's key in a table of hints.
// - A free, and a block's free request or completed free, goes to the shard that holds what it
//   names: the freeing thread's own, else the hint's, else the first that holds it (the hint was
//   overwritten by a key of the same slot), else the freeing thread's own, with nothing to apply
//   (allocated before recording).
// - What links records of different keys goes to shard 0: VMM handles, their mappings and
//   references (a handle's memory goes when its last mapping does), the caching allocators'
//   segments and mapped ranges (rare, next to their blocks), and phases.
// - A context's teardown frees in every shard.
// An allocation over one still live (whose free was lost) no longer replaces it when another
// thread made the first: both are carried, oldest first, and a reader keeps the newer.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#include "format/records.h"
#include "interpose/common/spin_lock.h"
#include "interpose/record/live_set.h"

namespace gmt::interpose {

class LiveShards {
 public:
  static constexpr std::size_t kShards = 16;

  // `hint_bits`: the table of hints has 2^hint_bits slots (a byte each).
  explicit LiveShards(unsigned hint_bits = 20);
  LiveShards(const LiveShards&) = delete;
  LiveShards& operator=(const LiveShards&) = delete;

  // The shard of a thread that starts writing: each in turn.
  uint32_t next_own() {
    return next_own_.fetch_add(1, std::memory_order_relaxed) % static_cast<uint32_t>(kShards);
  }

  // Calls `write()` (which stamps `rec`'s time and returns whether it was written), then applies
  // `rec` if it was, under the lock of the shard that holds what `rec` changes; `own` is the
  // calling thread's shard.
  template <class R, class Write>
  void track(R& rec, uint32_t own, Write write) {
    const Route to = route(rec);
    if constexpr (std::is_same_v<R, format::AllocRecord> ||
                  std::is_same_v<R, format::BlockRecord>) {
      if (to == Route::kOwn) {
        Shard& s = shards_[own];
        std::lock_guard<SpinLock> held(s.lock);
        if (!write()) return;
        apply(s, rec);
        hints_[hint_slot(rec)].store(static_cast<uint8_t>(own), std::memory_order_relaxed);
        return;
      }
    }
    if constexpr (std::is_same_v<R, format::FreeRecord> || std::is_same_v<R, format::BlockRecord>) {
      if (to == Route::kHolder) {
        track_at_holder(rec, own, write);
        return;
      }
    }
    if (to == Route::kEvery) {
      AllLocked all(*this);
      if (!write()) return;
      for (Shard& s : shards_) apply(s, rec);
      return;
    }
    Shard& s = shards_[0];
    std::lock_guard<SpinLock> held(s.lock);
    if (write()) apply(s, rec);
  }

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
  // The time of the last record applied to any shard.
  uint64_t last_ns() const;
  void clear();

  // Oldest first: an allocation over one still live (its free was lost: a signal handler's hook
  // records nothing) is live twice, on two threads' shards, and a reader keeps the newer.
  template <class Visit>
  void for_each_allocation(Visit visit) const {
    std::vector<const format::AllocRecord*> all;
    for (const Shard& s : shards_) {
      s.set.for_each([&](const format::AllocRecord& a) { all.push_back(&a); });
    }
    std::sort(all.begin(), all.end(),
              [](const format::AllocRecord* a, const format::AllocRecord* b) {
                return a->time_ns < b->time_ns;
              });
    for (const format::AllocRecord* a : all) visit(*a);
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
  const LivePhases& phases() const { return shards_[0].set.phases(); }

 private:
  struct alignas(64) Shard {
    SpinLock lock;
    LiveSet set;
    uint64_t last_ns = 0;  // the time of the last record applied to `set`
  };
  enum class Route : uint8_t { kOwn, kHolder, kShared, kEvery };

  static Route route(const format::AllocRecord& r) {
    return r.kind == format::MemoryKind::kVmmPhysical ? Route::kShared : Route::kOwn;
  }
  static Route route(const format::FreeRecord& r) {
    return r.api == format::Api::kCuMemRelease ? Route::kShared : Route::kHolder;
  }
  static Route route(const format::BlockRecord& r) {
    switch (static_cast<format::BlockAction>(r.action)) {
      case format::BlockAction::kAlloc:
        return Route::kOwn;
      case format::BlockAction::kFreeRequested:
      case format::BlockAction::kFreeCompleted:
        return Route::kHolder;
      default:
        return Route::kShared;
    }
  }
  static Route route(const format::MapRecord&) { return Route::kShared; }
  static Route route(const format::UnmapRecord&) { return Route::kShared; }
  static Route route(const format::RetainHandleRecord&) { return Route::kShared; }
  static Route route(const format::PhaseRecord&) { return Route::kShared; }
  static Route route(const format::ContextDestroyedRecord&) { return Route::kEvery; }

  template <class R>
  static void apply(Shard& s, const R& rec) {
    s.set.apply(rec);
    s.last_ns = rec.time_ns;
  }

  // An allocation and its free hint at one slot; a block and its frees at another (the first
  // block of a segment has the segment's address).
  std::size_t slot_of(uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 40) & hint_mask_;
  }
  std::size_t hint_slot(const format::AllocRecord& r) const {
    return slot_of(live_key(r.kind, r.address));
  }
  std::size_t hint_slot(const format::FreeRecord& r) const {
    return slot_of(live_key_freed_by(r.api, r.address));
  }
  std::size_t hint_slot(const format::BlockRecord& r) const {
    return slot_of(r.address ^ (uint64_t{r.allocator + 1} << 56) ^
                   (static_cast<uint64_t>(static_cast<uint32_t>(r.device)) << 40));
  }

  template <class R, class Write>
  void track_at_holder(R& rec, uint32_t own, Write write) {
    // What `rec` names cannot move between shards meanwhile: it was allocated before this free
    // began, and cannot be allocated again before this free's record is written.
    // The thread's own shard first: most frees are of the thread's own allocations, whose shard
    // is in its core's cache, while the hint is a byte of a large table, most likely not.
    if (apply_if_held(shards_[own], rec, write)) return;
    const uint32_t hinted = hints_[hint_slot(rec)].load(std::memory_order_relaxed);
    for (uint32_t i = 0; i < kShards; ++i) {
      const uint32_t at = (hinted + i) % kShards;
      if (at != own && apply_if_held(shards_[at], rec, write)) return;
    }
    std::lock_guard<SpinLock> held(shards_[own].lock);
    write();  // nothing tracked to free
  }

  // Under `s`'s lock: if `s` holds what `rec` names, writes `rec` and applies it if written.
  template <class R, class Write>
  static bool apply_if_held(Shard& s, R& rec, Write write) {
    std::lock_guard<SpinLock> held(s.lock);
    if (!s.set.holds(rec)) return false;
    if (write()) apply(s, rec);
    return true;
  }

  // A free (routed to its holder, so never cuMemRelease): the same, with one probe of the table.
  template <class Write>
  static bool apply_if_held(Shard& s, format::FreeRecord& rec, Write write) {
    std::lock_guard<SpinLock> held(s.lock);
    const std::size_t at = s.set.position(rec);
    if (at == LiveSet::kNowhere) return false;
    if (write()) {
      s.set.free_at(at);  // writing a record changes no live set
      s.last_ns = rec.time_ns;
    }
    return true;
  }

  std::array<Shard, kShards> shards_;
  std::unique_ptr<std::atomic<uint8_t>[]> hints_;  // shard numbers, by slot
  std::size_t hint_mask_;
  std::atomic<uint32_t> next_own_{0};
};

}  // namespace gmt::interpose
