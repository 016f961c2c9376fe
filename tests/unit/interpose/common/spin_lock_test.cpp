// SPDX-License-Identifier: Apache-2.0
// The live-set shards' lock: mutual exclusion under contention, and a waiter that outlasts a long
// hold (as threads wait out a checkpoint: past its spins and yields, into its naps) gets the lock
// once it is given back, not before.
#include "interpose/common/spin_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace gmt::interpose {
namespace {

TEST(SpinLock, ThreadsTakeItOneAtATime) {
  SpinLock lock;
  uint64_t counter = 0;  // unguarded but for the lock: a race loses increments (and TSan says so)
  constexpr int kThreads = 8;
  constexpr int kEach = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        std::lock_guard<SpinLock> held(lock);
        ++counter;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counter, uint64_t{kThreads} * kEach);
}

TEST(SpinLock, TryLockFailsWhileHeld) {
  SpinLock lock;
  ASSERT_TRUE(lock.try_lock());
  EXPECT_FALSE(lock.try_lock());
  lock.unlock();
  EXPECT_TRUE(lock.try_lock());
  lock.unlock();
}

TEST(SpinLock, AWaiterOutlastsALongHold) {
  SpinLock lock;
  lock.lock();
  std::atomic<bool> acquired{false};
  std::thread waiter([&] {
    lock.lock();
    acquired = true;
    lock.unlock();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(acquired.load());
  lock.unlock();
  waiter.join();
  EXPECT_TRUE(acquired.load());
}

}  // namespace
}  // namespace gmt::interpose
