// SPDX-License-Identifier: Apache-2.0
#include "interpose/sampler/device_high_water.h"

#include <sched.h>

#include "interpose/common/instance_id.h"

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

namespace {

// The calling thread's slot, and whose: a process has one DeviceHighWater, tests make more, one
// after the other, maybe at the same address.
struct MySlot {
  uint64_t owner = 0;
  void* slot = nullptr;
};
thread_local MySlot my_slot_cache __attribute__((tls_model("initial-exec")));

// Frees that cannot end a device-resident allocation: no table needs looking into.
bool frees_host_memory(Api api) {
  return api == Api::kCuMemFreeHost || api == Api::kCuMemHostUnregister;
}

}  // namespace

DeviceHighWater::DeviceHighWater() : id_(new_instance_id()) {
  have_exit_key_ = pthread_key_create(&exit_key_, &DeviceHighWater::on_thread_exit) == 0;
}

DeviceHighWater::~DeviceHighWater() {
  if (have_exit_key_) pthread_key_delete(exit_key_);  // no exit handler may find a slot freed
  const std::size_t count = slot_count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < count; ++i) delete slots_[i];
}

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

DeviceHighWater::ThreadSlot& DeviceHighWater::my_slot() {
  if (my_slot_cache.owner == id_) [[likely]]
    return *static_cast<ThreadSlot*>(my_slot_cache.slot);
  ThreadSlot& slot = claim_slot();
  my_slot_cache = {id_, &slot};
  if (have_exit_key_) pthread_setspecific(exit_key_, &slot);
  return slot;
}

// A slot a thread that ended gave back, else a new one; past kMaxThreads, the last one, shared
// (its table is under its lock, and its changes are published at once, not kept).
DeviceHighWater::ThreadSlot& DeviceHighWater::claim_slot() {
  std::lock_guard<std::mutex> lock(registry_);
  const std::size_t count = slot_count_.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < count; ++i) {
    bool expected = false;
    if (slots_[i]->taken.compare_exchange_strong(expected, true)) return *slots_[i];
  }
  if (count == kMaxThreads) {
    slots_[kMaxThreads - 1]->shared.store(true, std::memory_order_relaxed);
    return *slots_[kMaxThreads - 1];
  }
  auto* slot = new ThreadSlot;  // kept after its thread ends: other threads may free what it holds
  slot->owner = this;
  slot->taken.store(true, std::memory_order_relaxed);
  slots_[count] = slot;
  slot_count_.store(count + 1, std::memory_order_release);
  return *slot;
}

// The thread's unpublished frees go to the totals, and its slot to the next thread.
void DeviceHighWater::on_thread_exit(void* opaque) {
  auto* slot = static_cast<ThreadSlot*>(opaque);
  for (int d = 0; d < kMaxDevices; ++d) {
    const int64_t bytes = slot->unpublished[d].exchange(0, std::memory_order_relaxed);
    if (bytes != 0) slot->owner->published_[d].fetch_add(bytes, std::memory_order_relaxed);
  }
  // Whatever this thread records from here on (another exit handler's allocation) claims a
  // slot again: this one may be another thread's by then.
  my_slot_cache = {};
  slot->taken.store(false, std::memory_order_release);
}

bool DeviceHighWater::allocated(int device, MemoryKind kind, uint64_t address, uint64_t size,
                                uint32_t context) {
  if (device < 0 || device >= kMaxDevices || !format::counts_toward_device_usage(kind)) {
    return false;
  }
  ThreadSlot& slot = my_slot();
  Entry replaced;
  bool had = false;
  {
    std::lock_guard<SpinLock> lock(slot.lock);
    // A free we never saw: the address is evidently free again.
    had = slot.live.put(key_of(kind, address), Entry{device, context, size}, &replaced);
  }
  if (had) account(slot, replaced.device, -static_cast<int64_t>(replaced.size));
  return account(slot, device, static_cast<int64_t>(size));
}

void DeviceHighWater::freeing(Api api, uint64_t address) {
  if (frees_host_memory(api)) return;
  ThreadSlot& slot = my_slot();
  Entry taken;
  if (take(slot, key_freed_by(api, address), &taken)) {
    account(slot, taken.device, -static_cast<int64_t>(taken.size));
  }
}

bool DeviceHighWater::take(ThreadSlot& mine, uint64_t key, Entry* taken) {
  {
    std::lock_guard<SpinLock> lock(mine.lock);
    if (mine.live.take(key, taken)) return true;
  }
  const std::size_t count = slot_count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < count; ++i) {
    ThreadSlot& other = *slots_[i];
    if (&other == &mine) continue;
    std::lock_guard<SpinLock> lock(other.lock);
    if (other.live.take(key, taken)) return true;
  }
  return false;
}

// Frees are kept unpublished up to this much (per thread and device): a steady state of
// allocations and frees then writes nothing shared, while the totals stay within this of the
// truth per thread (and the exact count decides a mark).
constexpr int64_t kKeepFreed = int64_t{64} << 20;

bool DeviceHighWater::account(ThreadSlot& slot, int device, int64_t bytes) {
  int64_t pending = bytes;
  if (!slot.shared.load(std::memory_order_relaxed)) [[likely]] {
    std::atomic<int64_t>& mine = slot.unpublished[device];
    pending += mine.load(std::memory_order_relaxed);
    if (pending <= 0 && pending > -kKeepFreed) {
      mine.store(pending, std::memory_order_relaxed);
      return false;  // not above what this thread had published: no new mark from it
    }
    mine.store(0, std::memory_order_relaxed);
  }
  const int64_t total = published_[device].fetch_add(pending, std::memory_order_relaxed) + pending;
  if (pending < 0 || total <= 0) return false;
  return check_mark(device, static_cast<uint64_t>(total));
}

// `candidate` is the published total, at least the exact count (unpublished counts are frees):
// when it passes the mark, the exact count decides.
bool DeviceHighWater::check_mark(int device, uint64_t candidate) {
  uint64_t reported = reported_[device].load(std::memory_order_relaxed);
  const auto margin = [](uint64_t mark) { return mark / 100 > (1u << 20) ? mark / 100 : 1u << 20; };
  if (candidate < reported + margin(reported)) return false;
  int64_t exact = published_[device].load(std::memory_order_relaxed);
  const std::size_t count = slot_count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < count; ++i) {
    exact += slots_[i]->unpublished[device].load(std::memory_order_relaxed);
  }
  if (exact <= 0) return false;
  const auto now = static_cast<uint64_t>(exact);
  while (now >= reported + margin(reported)) {
    if (reported_[device].compare_exchange_weak(reported, now, std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

void DeviceHighWater::subtract_now(const Entry& e) {
  published_[e.device].fetch_sub(static_cast<int64_t>(e.size), std::memory_order_relaxed);
}

void DeviceHighWater::context_gone(uint32_t context) {
  if (context == 0) return;
  const std::size_t count = slot_count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < count; ++i) {
    ThreadSlot& slot = *slots_[i];
    std::lock_guard<SpinLock> lock(slot.lock);
    slot.live.remove_if([&](const Entry& e) {
      if (e.context != context) return false;
      subtract_now(e);
      return true;
    });
  }
}

void DeviceHighWater::before_fork() {
  registry_.lock();
  const std::size_t count = slot_count_.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < count; ++i) slots_[i]->lock.lock();
}

void DeviceHighWater::after_fork_in_parent() {
  const std::size_t count = slot_count_.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < count; ++i) slots_[i]->lock.unlock();
  registry_.unlock();
}

// The child's trace starts empty, so its count does too; of the threads, only the one that
// forked is there, and keeps its slot.
void DeviceHighWater::after_fork_in_child() {
  const void* mine = my_slot_cache.owner == id_ ? my_slot_cache.slot : nullptr;
  const std::size_t count = slot_count_.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < count; ++i) {
    ThreadSlot& slot = *slots_[i];
    slot.live.clear();
    for (auto& bytes : slot.unpublished) bytes.store(0, std::memory_order_relaxed);
    slot.taken.store(&slot == mine, std::memory_order_relaxed);
    slot.lock.unlock();
  }
  for (int d = 0; d < kMaxDevices; ++d) {
    published_[d].store(0, std::memory_order_relaxed);
    reported_[d].store(0, std::memory_order_relaxed);
  }
  registry_.unlock();
}

}  // namespace gmt::interpose
