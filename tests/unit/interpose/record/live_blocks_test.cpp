// SPDX-License-Identifier: Apache-2.0
// What a bounded trace's checkpoint carries of the caching allocators: their live blocks (with a
// requested free kept until it completes), segments, and mapped ranges trimmed or split by
// partial unmaps, per allocator and device.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "interpose/record/live_set.h"

namespace gmt::interpose {
namespace {

using format::BlockAction;
using format::BlockRecord;

BlockRecord block(uint64_t t, BlockAction action, uint64_t address, uint64_t size,
                  uint32_t allocator = 0, int32_t device = 0, uint32_t stack = 0) {
  BlockRecord r;
  r.time_ns = t;
  r.allocator = allocator;
  r.action = static_cast<uint32_t>(action);
  r.device = device;
  r.address = address;
  r.size = size;
  r.stream = 7;
  r.stack = stack;
  return r;
}

// (allocator, device, action, address, size, time, stack), sorted: for_each's order between
// entries of one kind is the table's.
using Row = std::tuple<uint32_t, int32_t, uint32_t, uint64_t, uint64_t, uint64_t, uint32_t>;
std::vector<Row> rows(const LiveBlocks& live) {
  std::vector<Row> out;
  live.for_each([&](const BlockRecord& r) {
    EXPECT_EQ(r.stream, 7u);
    out.emplace_back(r.allocator, r.device, r.action, r.address, r.size, r.time_ns, r.stack);
  });
  EXPECT_EQ(out.size(), live.size());
  std::sort(out.begin(), out.end());
  return out;
}

constexpr uint32_t A = static_cast<uint32_t>(BlockAction::kAlloc);
constexpr uint32_t R = static_cast<uint32_t>(BlockAction::kFreeRequested);
constexpr uint32_t S = static_cast<uint32_t>(BlockAction::kSegmentAlloc);
constexpr uint32_t M = static_cast<uint32_t>(BlockAction::kSegmentMap);

TEST(LiveBlocks, KeepsBlocksUntilTheirFreeCompletesWithTheRequestInBetween) {
  LiveBlocks live;
  live.apply(block(1, BlockAction::kAlloc, 0x1000, 512, 0, 0, 11));
  live.apply(block(2, BlockAction::kAlloc, 0x2000, 1024, 0, 0, 12));
  live.apply(block(3, BlockAction::kAlloc, 0x3000, 2048, 0, 0, 13));
  live.apply(block(4, BlockAction::kFreeRequested, 0x2000, 1024));
  live.apply(block(5, BlockAction::kFreeRequested, 0x3000, 2048));
  live.apply(block(6, BlockAction::kFreeCompleted, 0x3000, 2048));
  live.apply(block(7, BlockAction::kFreeCompleted, 0x9000, 64));  // never allocated: nothing
  live.apply(block(8, BlockAction::kOom, 0, 1 << 30));            // changes nothing live
  EXPECT_EQ(rows(live), (std::vector<Row>{{0, 0, A, 0x1000, 512, 1, 11},
                                          {0, 0, A, 0x2000, 1024, 2, 12},
                                          {0, 0, R, 0x2000, 1024, 4, 0}}));
  // The same address handed out again replaces the block, its pending request included.
  live.apply(block(9, BlockAction::kAlloc, 0x2000, 4096, 0, 0, 14));
  EXPECT_EQ(rows(live),
            (std::vector<Row>{{0, 0, A, 0x1000, 512, 1, 11}, {0, 0, A, 0x2000, 4096, 9, 14}}));
}

TEST(LiveBlocks, KeepsEachAllocatorAndDeviceApart) {
  LiveBlocks live;
  live.apply(block(1, BlockAction::kAlloc, 0x1000, 512, 1, 0, 1));
  live.apply(block(2, BlockAction::kAlloc, 0x1000, 256, 2, 0, 2));  // a nested allocator's
  live.apply(block(3, BlockAction::kSegmentAlloc, 0x1000, 1 << 21, 1, 1, 3));
  live.apply(block(4, BlockAction::kFreeCompleted, 0x1000, 512, 1, 0));
  EXPECT_EQ(rows(live),
            (std::vector<Row>{{1, 1, S, 0x1000, 1 << 21, 3, 3}, {2, 0, A, 0x1000, 256, 2, 2}}));
  live.clear();
  EXPECT_EQ(live.size(), 0u);
}

TEST(LiveBlocks, KeepsSegmentsUntilFreed) {
  LiveBlocks live;
  live.apply(block(1, BlockAction::kSegmentAlloc, 0x200000, 2 << 20, 0, 0, 5));
  live.apply(block(2, BlockAction::kSegmentAlloc, 0x400000, 20 << 20, 0, 0, 6));
  live.apply(block(3, BlockAction::kSegmentFree, 0x200000, 2 << 20));
  EXPECT_EQ(rows(live), (std::vector<Row>{{0, 0, S, 0x400000, 20 << 20, 2, 6}}));
}

TEST(LiveBlocks, TrimsAndSplitsMappedRangesThatArePartlyUnmapped) {
  LiveBlocks live;
  constexpr uint64_t P = 2 << 20;  // a page of an expandable segment
  live.apply(block(1, BlockAction::kSegmentMap, 10 * P, 4 * P, 0, 0, 21));  // pages 10-13
  live.apply(block(2, BlockAction::kSegmentMap, 20 * P, 6 * P, 0, 0, 22));  // pages 20-25
  live.apply(block(3, BlockAction::kSegmentMap, 30 * P, 1 * P, 0, 0, 23));  // page 30
  live.apply(block(4, BlockAction::kSegmentUnmap, 12 * P, 2 * P));          // 10-13's end
  live.apply(block(5, BlockAction::kSegmentUnmap, 22 * P, 2 * P));          // 20-25's middle
  live.apply(block(6, BlockAction::kSegmentUnmap, 30 * P, 1 * P));          // all of page 30
  EXPECT_EQ(rows(live), (std::vector<Row>{{0, 0, M, 10 * P, 2 * P, 1, 21},
                                          {0, 0, M, 20 * P, 2 * P, 2, 22},
                                          {0, 0, M, 24 * P, 2 * P, 2, 22}}));
  // One unmap across several ranges: the start of one, the whole of another, the end of none.
  live.apply(block(7, BlockAction::kSegmentUnmap, 11 * P, 14 * P));  // pages 11-24
  EXPECT_EQ(rows(live),
            (std::vector<Row>{{0, 0, M, 10 * P, 1 * P, 1, 21}, {0, 0, M, 25 * P, 1 * P, 2, 22}}));
  // Mapped again over part of a range: the new mapping replaces the overlap.
  live.apply(block(8, BlockAction::kSegmentMap, 9 * P, 2 * P, 0, 0, 24));  // pages 9-10
  EXPECT_EQ(rows(live),
            (std::vector<Row>{{0, 0, M, 9 * P, 2 * P, 8, 24}, {0, 0, M, 25 * P, 1 * P, 2, 22}}));
}

TEST(LiveBlocks, TheLiveSetAppliesBlockRecordsBesideAllocations) {
  EXPECT_TRUE(changes_live_set<format::BlockRecord>());
  LiveSet live;
  live.apply(block(1, BlockAction::kAlloc, 0x1000, 512, 0, 0, 3));
  EXPECT_EQ(live.size(), 0u);  // allocations only
  EXPECT_EQ(rows(live.blocks()), (std::vector<Row>{{0, 0, A, 0x1000, 512, 1, 3}}));
  live.clear();
  EXPECT_EQ(live.blocks().size(), 0u);
}

format::PhaseRecord phase(uint64_t t, format::PhaseAction action, uint64_t tid, uint32_t domain,
                          uint32_t name, uint64_t range = 0) {
  format::PhaseRecord r;
  r.time_ns = t;
  r.tid = tid;
  r.action = static_cast<uint32_t>(action);
  r.domain = domain;
  r.name = name;
  r.range = range;
  return r;
}

// What a checkpoint carries of the phases: each thread's pushed ranges per domain, outermost
// first, and the started ranges not yet ended; a pop with nothing pushed (a range opened before
// recording) changes nothing.
TEST(LivePhases, KeepsEachThreadsPushedRangesAndTheStartedOnesUntilTheyClose) {
  using format::PhaseAction;
  LivePhases live;
  live.apply(phase(1, PhaseAction::kPush, 10, 0, 1));  // thread 10: train
  live.apply(phase(2, PhaseAction::kPush, 10, 0, 2));  //   epoch
  live.apply(phase(3, PhaseAction::kPush, 10, 0, 3));  //     step
  live.apply(phase(4, PhaseAction::kPop, 10, 0, 0));   //     step closes
  live.apply(phase(5, PhaseAction::kPush, 10, 7, 4));  // thread 10, domain 7
  live.apply(phase(6, PhaseAction::kPop, 11, 0, 0));   // thread 11 pushed nothing
  live.apply(phase(7, PhaseAction::kStart, 12, 0, 5, 100));
  live.apply(phase(8, PhaseAction::kStart, 12, 0, 6, 101));
  live.apply(phase(9, PhaseAction::kEnd, 13, 0, 0, 100));  // ends on another thread
  live.apply(phase(10, PhaseAction::kMark, 10, 0, 9));
  live.apply(phase(11, PhaseAction::kPush, 11, 0, 8));
  live.apply(phase(12, PhaseAction::kPop, 11, 0, 0));  // thread 11 has none open again
  std::vector<std::pair<uint64_t, uint32_t>> open;     // (time, name)
  live.for_each([&](const format::PhaseRecord& r) { open.emplace_back(r.time_ns, r.name); });
  EXPECT_EQ(open, (std::vector<std::pair<uint64_t, uint32_t>>{{1, 1}, {2, 2}, {5, 4}, {8, 6}}));
  EXPECT_EQ(live.size(), 4u);
  live.clear();
  EXPECT_EQ(live.size(), 0u);
}

}  // namespace
}  // namespace gmt::interpose
