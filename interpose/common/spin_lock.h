// SPDX-License-Identifier: Apache-2.0
// A lock for data that one thread nearly always takes alone (a bounded trace's live-set shard,
// owned by its writing thread): one atomic exchange to take it and a plain store to give it back,
// where std::mutex pays two atomic read-modify-writes, a sixth of a recorded event's cost. A thread
// that finds it taken (a checkpoint holds every shard while it writes) spins briefly, then yields
// the core, then sleeps in short naps: the holder may hold it for the milliseconds a large
// checkpoint takes, and a waiter must not burn a core meanwhile.
#pragma once

#include <sched.h>
#include <time.h>

#include <atomic>

namespace gmt::interpose {

class SpinLock {
 public:
  void lock() {
    while (taken_.exchange(true, std::memory_order_acquire)) wait_until_free();
  }
  bool try_lock() { return !taken_.exchange(true, std::memory_order_acquire); }
  void unlock() { taken_.store(false, std::memory_order_release); }

 private:
  void wait_until_free() const {
    for (int spins = 0; taken_.load(std::memory_order_relaxed); ++spins) {
      if (spins < 64) {
        relax();
      } else if (spins < 128) {
        sched_yield();
      } else {
        const timespec nap{0, 20 * 1000};
        nanosleep(&nap, nullptr);
      }
    }
  }

  static void relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  std::atomic<bool> taken_{false};
};

}  // namespace gmt::interpose
