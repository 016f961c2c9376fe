#include "interpose/record/device_high_water.h"

#include <sched.h>

#include <mutex>

namespace gmt::interpose {

void DeviceHighWater::SpinLock::lock() {
  for (int spins = 0; locked_.exchange(true, std::memory_order_acquire); ++spins) {
    // Wait on a plain load, and give the CPU up if the holder is not running.
    while (locked_.load(std::memory_order_relaxed)) {
      if (++spins > 64) {
        sched_yield();
      } else {
        __builtin_ia32_pause();
      }
    }
  }
}

using format::Api;
using format::MemoryKind;

// VMM handles and arrays are freed by handle, everything else by address; the top bits keep the
// name spaces apart (user-space addresses and driver handles stay below 2^56).
uint64_t DeviceHighWater::key_of(MemoryKind kind, uint64_t address) {
  switch (kind) {
    case MemoryKind::kVmmPhysical:
      return address | (1ull << 62);
    case MemoryKind::kArray:
      return address | (2ull << 62);
    default:
      return address;
  }
}

uint64_t DeviceHighWater::key_freed_by(Api api, uint64_t address) {
  switch (api) {
    case Api::kCuMemRelease:
      return address | (1ull << 62);
    case Api::kCuArrayDestroy:
    case Api::kCuMipmappedArrayDestroy:
      return address | (2ull << 62);
    default:
      return address;
  }
}

bool DeviceHighWater::allocated(int device, MemoryKind kind, uint64_t address, uint64_t size,
                                uint32_t context) {
  if (device < 0 || device >= kMaxDevices || !format::counts_toward_device_usage(kind)) {
    return false;
  }
  const uint64_t key = key_of(kind, address);
  {
    Shard& s = shard(key);
    std::lock_guard<SpinLock> lock(s.lock);
    Entry replaced;
    // A free we never saw: the address is evidently free again.
    if (s.live.put(key, Entry{device, context, size}, &replaced)) subtract(replaced);
  }
  const uint64_t now = live_[device].fetch_add(size, std::memory_order_relaxed) + size;
  uint64_t reported = reported_[device].load(std::memory_order_relaxed);
  const uint64_t margin = reported / 100 > (1u << 20) ? reported / 100 : (1u << 20);
  while (now >= reported + margin) {
    if (reported_[device].compare_exchange_weak(reported, now, std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

void DeviceHighWater::subtract(const Entry& e) {
  live_[e.device].fetch_sub(e.size, std::memory_order_relaxed);
}

void DeviceHighWater::freeing(Api api, uint64_t address) {
  const uint64_t key = key_freed_by(api, address);
  Shard& s = shard(key);
  std::lock_guard<SpinLock> lock(s.lock);
  Entry taken;
  if (s.live.take(key, &taken)) subtract(taken);
}

void DeviceHighWater::context_gone(uint32_t context) {
  if (context == 0) return;
  for (Shard& s : shards_) {
    std::lock_guard<SpinLock> lock(s.lock);
    s.live.remove_if([&](const Entry& e) {
      if (e.context != context) return false;
      subtract(e);
      return true;
    });
  }
}

void DeviceHighWater::before_fork() {
  for (Shard& s : shards_) s.lock.lock();
}

void DeviceHighWater::after_fork_in_parent() {
  for (Shard& s : shards_) s.lock.unlock();
}

// The child's trace starts empty, so its count does too.
void DeviceHighWater::after_fork_in_child() {
  for (Shard& s : shards_) {
    s.live.clear();
    s.lock.unlock();
  }
  for (int d = 0; d < kMaxDevices; ++d) {
    live_[d].store(0, std::memory_order_relaxed);
    reported_[d].store(0, std::memory_order_relaxed);
  }
}

}  // namespace gmt::interpose
