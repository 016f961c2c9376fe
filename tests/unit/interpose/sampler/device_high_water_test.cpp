// SPDX-License-Identifier: Apache-2.0
// The recorder's in-process high-water count: a new mark (1 MiB past the last, at these sizes)
// is reported at the allocation that makes it, whichever threads allocated and freed before,
// and never again for the same level. Threads keep their frees unpublished and their tables of
// their own, so these cases cross threads: frees of another thread's allocations, a thread that
// ended with frees unpublished, a slot handed to a new thread, a context torn down.
#include "interpose/sampler/device_high_water.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace gmt::interpose {
namespace {

using format::Api;
using format::MemoryKind;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kBase = 0x7f0000000000ull;

bool alloc(DeviceHighWater& hw, uint64_t index, uint64_t bytes = kMiB, uint32_t context = 1) {
  return hw.allocated(0, MemoryKind::kDevice, kBase + index * kMiB, bytes, context);
}
void free_(DeviceHighWater& hw, uint64_t index) {
  hw.freeing(Api::kCuMemFree, kBase + index * kMiB);
}
template <class F>
void on_another_thread(F f) {
  std::thread t(f);
  t.join();
}

TEST(DeviceHighWater, EachNewMarkOnceAtTheAllocationThatMakesIt) {
  DeviceHighWater hw;
  for (uint64_t i = 0; i < 8; ++i) EXPECT_TRUE(alloc(hw, i)) << i;  // 1 MiB past the last each
  for (uint64_t i = 0; i < 5; ++i) free_(hw, i);
  for (uint64_t i = 0; i < 5; ++i) EXPECT_FALSE(alloc(hw, i)) << i;  // back to 8 MiB
  EXPECT_TRUE(alloc(hw, 8));                                         // 9 MiB
  EXPECT_FALSE(alloc(hw, 9, kMiB / 2));                              // 9.5: under the margin
  EXPECT_TRUE(alloc(hw, 10, kMiB / 2));                              // 10
  // Other kinds and devices out of range do not count.
  EXPECT_FALSE(hw.allocated(0, MemoryKind::kHostPinned, kBase + 100 * kMiB, 64 * kMiB, 1));
  EXPECT_FALSE(hw.allocated(-1, MemoryKind::kDevice, kBase + 101 * kMiB, 64 * kMiB, 1));
  EXPECT_FALSE(hw.allocated(64, MemoryKind::kDevice, kBase + 102 * kMiB, 64 * kMiB, 1));
}

TEST(DeviceHighWater, FreesOfAnotherThreadsAllocationsCount) {
  DeviceHighWater hw;
  for (uint64_t i = 0; i < 8; ++i) alloc(hw, i);
  // Another thread frees half of them; it keeps them unpublished, then ends (publishing).
  on_another_thread([&] {
    for (uint64_t i = 0; i < 4; ++i) free_(hw, i);
  });
  for (uint64_t i = 0; i < 4; ++i) EXPECT_FALSE(alloc(hw, i)) << i;
  EXPECT_TRUE(alloc(hw, 8));
}

TEST(DeviceHighWater, AnotherThreadsUnpublishedFreesAreCountedAtAMark) {
  DeviceHighWater hw;
  for (uint64_t i = 0; i < 8; ++i) alloc(hw, i);  // 8 MiB, the mark
  std::atomic<int> step{0};
  std::thread freer([&] {
    for (uint64_t i = 0; i < 4; ++i) free_(hw, i);  // kept by this thread, not published
    step = 1;
    while (step != 2) std::this_thread::yield();  // still running: nothing published at exit
  });
  while (step != 1) std::this_thread::yield();
  // The published total says 8 MiB + what this thread adds; the exact count is 4 MiB less.
  for (uint64_t i = 10; i < 14; ++i) EXPECT_FALSE(alloc(hw, i)) << i;
  EXPECT_TRUE(alloc(hw, 14));
  step = 2;
  freer.join();
}

TEST(DeviceHighWater, AThreadsSlotAndItsAllocationsGoToTheNextThread) {
  DeviceHighWater hw;
  on_another_thread([&] {
    for (uint64_t i = 0; i < 8; ++i) EXPECT_TRUE(alloc(hw, i)) << i;
  });
  on_another_thread([&] {
    for (uint64_t i = 0; i < 8; ++i) free_(hw, i);  // found in its own table: the slot's
  });
  for (uint64_t i = 0; i < 8; ++i) EXPECT_FALSE(alloc(hw, 20 + i)) << i;
  EXPECT_TRUE(alloc(hw, 28));
}

TEST(DeviceHighWater, HostFreesAndUnknownAddressesChangeNothing) {
  DeviceHighWater hw;
  for (uint64_t i = 0; i < 4; ++i) alloc(hw, i);
  hw.freeing(Api::kCuMemFreeHost, kBase);  // a host free cannot end device memory
  free_(hw, 1000);                         // never allocated
  EXPECT_TRUE(alloc(hw, 4));               // 5 MiB: 4 were still counted
}

TEST(DeviceHighWater, AContextTornDownTakesItsAllocationsFromEveryThread) {
  DeviceHighWater hw;
  on_another_thread([&] {
    for (uint64_t i = 0; i < 4; ++i) alloc(hw, i, kMiB, /*context=*/7);
  });
  for (uint64_t i = 4; i < 8; ++i) alloc(hw, i, kMiB, /*context=*/8);
  hw.context_gone(7);
  for (uint64_t i = 0; i < 4; ++i) EXPECT_FALSE(alloc(hw, 10 + i)) << i;
  EXPECT_TRUE(alloc(hw, 14));
}

TEST(DeviceHighWater, ReallocatingALiveAddressReplacesIt) {
  DeviceHighWater hw;
  EXPECT_TRUE(alloc(hw, 0, 4 * kMiB));
  EXPECT_FALSE(alloc(hw, 0, 4 * kMiB));  // the same address again: a free we never saw
  EXPECT_TRUE(alloc(hw, 1, kMiB));       // 5 MiB
}

// Many threads at once, each allocating and freeing its own addresses: the count ends where
// it started (a mark from a fresh level proves it).
TEST(DeviceHighWater, ManyThreadsAtOnceLeaveAnExactCount) {
  DeviceHighWater hw;
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < 8; ++t) {
    threads.emplace_back([&hw, t] {
      for (uint64_t round = 0; round < 2000; ++round) {
        const uint64_t index = 1000 + t * 100 + round % 50;
        alloc(hw, index);
        if (round % 3 == 0)
          on_another_thread([&] { free_(hw, index); });
        else
          free_(hw, index);
      }
    });
  }
  for (auto& t : threads) t.join();
  // Everything was freed: 200 MiB from here is 200 marks of 1 MiB... counted from the last mark
  // reported, which is at most 8 MiB (8 threads of 1 MiB at once).
  int marks = 0;
  for (uint64_t i = 0; i < 20; ++i) marks += alloc(hw, 5000 + i) ? 1 : 0;
  EXPECT_GE(marks, 20 - 9);
  EXPECT_LE(marks, 20);
}

}  // namespace
}  // namespace gmt::interpose
