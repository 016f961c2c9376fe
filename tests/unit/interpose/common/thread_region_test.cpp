// SPDX-License-Identifier: Apache-2.0
// A thread's region: its blocks are aligned and share one 2 MiB aligned range; the range is
// given back once its blocks are released and its thread has ended (or moved to a new range),
// whichever comes last; a block too large for a region comes from the heap.
#include "interpose/common/thread_region.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace gmt::interpose {
namespace {

constexpr uintptr_t kRegion = uintptr_t{2} << 20;

uintptr_t region_of(const void* block) {
  return reinterpret_cast<uintptr_t>(block) & ~(kRegion - 1);
}

// Whether the page at `address` is mapped: mincore fails with ENOMEM where it is not.
bool mapped(uintptr_t address) {
  unsigned char resident = 0;
  return mincore(reinterpret_cast<void*>(address), static_cast<std::size_t>(getpagesize()),
                 &resident) == 0;
}

TEST(ThreadRegion, AThreadsBlocksAreAlignedAndShareOneRange) {
  void* first = nullptr;
  void* second = nullptr;
  std::thread([&] {
    first = thread_region::allocate(100);
    second = thread_region::allocate(600 * 1024);
  }).join();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(second) % 64, 0u);
  EXPECT_EQ(region_of(first), region_of(second));
  EXPECT_GE(reinterpret_cast<uintptr_t>(second), reinterpret_cast<uintptr_t>(first) + 100);
  std::memset(second, 0xab, 600 * 1024);  // all of it is ours to write
  const uintptr_t range = region_of(first);
  thread_region::release(first);
  EXPECT_TRUE(mapped(range));  // the second block is still in it
  thread_region::release(second);
  EXPECT_FALSE(mapped(range));  // its thread has ended and its blocks are back
}

TEST(ThreadRegion, TheRangeGoesWhenItsThreadEndsAfterItsBlocks) {
  uintptr_t range = 0;
  bool mapped_while_running = false;
  std::thread([&] {
    void* block = thread_region::allocate(4096);
    ASSERT_NE(block, nullptr);
    range = region_of(block);
    thread_region::release(block);
    mapped_while_running = mapped(range);  // its thread may still hand out from it
  }).join();
  EXPECT_TRUE(mapped_while_running);
  EXPECT_FALSE(mapped(range));
}

TEST(ThreadRegion, EachThreadHasARangeOfItsOwn) {
  void* mine = thread_region::allocate(64);
  void* theirs = nullptr;
  std::thread([&] { theirs = thread_region::allocate(64); }).join();
  ASSERT_NE(mine, nullptr);
  ASSERT_NE(theirs, nullptr);
  EXPECT_NE(region_of(mine), region_of(theirs));
  thread_region::release(theirs);
  thread_region::release(mine);
}

TEST(ThreadRegion, AFullRangeIsLeftToItsBlocksAndANewOneTaken) {
  std::vector<void*> blocks;
  std::thread([&] {
    for (int i = 0; i < 5; ++i) blocks.push_back(thread_region::allocate(512 * 1024));
  }).join();
  ASSERT_EQ(blocks.size(), 5u);
  for (void* block : blocks) ASSERT_NE(block, nullptr);
  // Three blocks of 512 KiB (each with its header) fit in 2 MiB beside the bookkeeping; the
  // fourth starts a new range.
  EXPECT_EQ(region_of(blocks[0]), region_of(blocks[2]));
  EXPECT_NE(region_of(blocks[2]), region_of(blocks[3]));
  EXPECT_EQ(region_of(blocks[3]), region_of(blocks[4]));
  const uintptr_t full = region_of(blocks[0]);
  for (int i = 0; i < 3; ++i) thread_region::release(blocks[i]);
  EXPECT_FALSE(mapped(full));
  for (int i = 3; i < 5; ++i) thread_region::release(blocks[i]);
}

TEST(ThreadRegion, ABlockTooLargeForARangeComesFromTheHeap) {
  void* large = thread_region::allocate(std::size_t{3} << 20);
  ASSERT_NE(large, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large) % 64, 0u);
  std::memset(large, 0, std::size_t{3} << 20);
  thread_region::release(large);
}

TEST(ThreadRegion, ObjectsAreMadeAndDestroyedInIt) {
  struct Counted {
    explicit Counted(int* count) : count_(count) { ++*count_; }
    ~Counted() { --*count_; }
    int* count_;
  };
  int count = 0;
  Counted* object = make_in_thread_region<Counted>(&count);
  ASSERT_NE(object, nullptr);
  EXPECT_EQ(count, 1);
  destroy_in_thread_region(object);
  EXPECT_EQ(count, 0);
}

}  // namespace
}  // namespace gmt::interpose
