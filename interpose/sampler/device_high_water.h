// SPDX-License-Identifier: Apache-2.0
// An in-process count of each device's tracked bytes, kept only to know when the process reaches
// a new high-water mark: that is when the sampler must read the other views, so that the
// analyzer has NVML's and the driver's figures for the moment of the peak. The analyzer's replay
// stays the one exact count; this one only has to be close enough to decide when to sample.
//
// Many threads allocate at once in a real job, so the per-event path writes only memory of the
// calling thread's own, which stays in its core's cache:
// - each thread keeps the sizes of the allocations it made in a table of its own (a free made
//   by another thread looks in the other tables, which is rarer);
// - each thread keeps what it freed since it last published, and publishes to the shared
//   per-device totals only when what it allocates outgrows that (or it has kept a lot): a thread
//   that allocates and frees in a steady state writes no shared memory at all;
// - a published total past the last mark is only a candidate: the exact count (the totals and
//   every thread's unpublished frees) decides.
// Measured before this design, the shared totals and a table sharded by address made 16 threads
// spend 16 times as much CPU per event as one, on 16 cores (docs/benchmarks.md).
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "format/api.h"
#include "format/memory_kind.h"
#include "interpose/record/live_size_table.h"

namespace gmt::interpose {

class DeviceHighWater {
 public:
  static constexpr int kMaxDevices = 64;
  // Threads with a table at once; past that, threads share the last one (still exact, slower).
  static constexpr std::size_t kMaxThreads = 1024;

  DeviceHighWater();
  // The runtime's is never destroyed; tests' are, with no thread using them any more.
  ~DeviceHighWater();
  DeviceHighWater(const DeviceHighWater&) = delete;
  DeviceHighWater& operator=(const DeviceHighWater&) = delete;

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
  // which with one table per thread is the rule.
  class SpinLock {
   public:
    void lock();
    void unlock() { locked_.store(false, std::memory_order_release); }

   private:
    std::atomic<bool> locked_{false};
  };
  // One thread's: its allocations' sizes, and per device the bytes it freed (negative) or
  // allocated (positive, briefly) since it last published. A thread that ends leaves its slot,
  // allocations included (another thread may free them), to the next thread that needs one.
  struct alignas(64) ThreadSlot {
    DeviceHighWater* owner = nullptr;
    SpinLock lock;
    LiveSizeTable live;                                  // under `lock`
    std::atomic<int64_t> unpublished[kMaxDevices] = {};  // written by the owner only
    std::atomic<bool> taken{false};
    // Handed to more threads than kMaxThreads at once: its changes are published at once.
    std::atomic<bool> shared{false};
  };

  static uint64_t key_of(format::MemoryKind kind, uint64_t address);
  static uint64_t key_freed_by(format::Api api, uint64_t address);
  ThreadSlot& my_slot();
  ThreadSlot& claim_slot();
  static void on_thread_exit(void* slot);
  // The calling thread's slot changed by `bytes` on `device`; publishes what is due. True when
  // the device reached a new mark.
  bool account(ThreadSlot& slot, int device, int64_t bytes);
  bool check_mark(int device, uint64_t candidate);
  void subtract_now(const Entry& e);
  // Takes `key` from the calling thread's table, else from any other.
  bool take(ThreadSlot& mine, uint64_t key, Entry* taken);

  std::mutex registry_;                               // claiming a new slot
  ThreadSlot* slots_[kMaxThreads] = {};               // created on demand, kept while this lives
  std::atomic<std::size_t> slot_count_{0};            // slots_[0 .. slot_count_) exist
  std::atomic<int64_t> published_[kMaxDevices] = {};  // bytes, all threads' published changes
  std::atomic<uint64_t> reported_[kMaxDevices] = {};  // the last mark sampled
  pthread_key_t exit_key_{};
  bool have_exit_key_ = false;
  // Which DeviceHighWater a thread's cached slot belongs to: an address could be reused.
  const uint64_t id_;
};

}  // namespace gmt::interpose
