// An in-process count of each device's tracked bytes, kept only to know when the process reaches
// a new high-water mark: that is when the sampler must read the other views, so that the
// analyzer has NVML's and the driver's figures for the moment of the peak. The analyzer's replay
// stays the one exact count; this one only has to be close enough to decide when to sample.
#pragma once

#include <atomic>
#include <cstdint>

#include "format/api.h"
#include "format/memory_kind.h"
#include "interpose/record/live_size_table.h"

namespace gmt::interpose {

class DeviceHighWater {
 public:
  static constexpr int kMaxDevices = 64;

  // A device-resident allocation. True when it takes its device past the last high-water mark
  // reported by enough to be worth a sample (1 MiB, or 1 % of the mark).
  bool allocated(int device, format::MemoryKind kind, uint64_t address, uint64_t size,
                 uint32_t context);
  // Before a free: whatever the API, the allocation it ends, if it was one of ours.
  void freeing(format::Api api, uint64_t address);
  // Everything still counted in a destroyed context.
  void context_gone(uint32_t context);

  void before_fork();
  void after_fork_in_parent();
  void after_fork_in_child();

 private:
  using Entry = LiveSizeTable::Entry;
  // A lock held for a table probe only: a spin lock, cheaper than a mutex when uncontended,
  // which with 32 shards is the rule.
  class SpinLock {
   public:
    void lock();
    void unlock() { locked_.store(false, std::memory_order_release); }

   private:
    std::atomic<bool> locked_{false};
  };
  // Sharded by key, so that threads allocating at once rarely meet on a lock.
  struct alignas(64) Shard {
    SpinLock lock;
    LiveSizeTable live;
  };
  static constexpr std::size_t kShards = 32;  // the 5 top bits of the hash

  static uint64_t key_of(format::MemoryKind kind, uint64_t address);
  static uint64_t key_freed_by(format::Api api, uint64_t address);
  // Multiplicative hashing: allocations are aligned (often to 2 MiB), so low address bits would
  // send them all to one shard.
  Shard& shard(uint64_t key) { return shards_[(key * 0x9E3779B97F4A7C15ull) >> 59]; }
  void subtract(const Entry& e);

  Shard shards_[kShards];
  std::atomic<uint64_t> live_[kMaxDevices] = {};
  std::atomic<uint64_t> reported_[kMaxDevices] = {};
};

}  // namespace gmt::interpose
