// SPDX-License-Identifier: Apache-2.0
// The replay of a caching allocator's block events (format 4.2): its allocated and reserved bytes
// for the views, and leaks told by block site instead of by the site that grew the cache.
#include <gtest/gtest.h>

#include <vector>

#include "analyzer/model/leak_classes.h"
#include "analyzer/model/replay.h"
#include "tests/unit/trace_bytes.h"

namespace gmt::analyzer {
namespace {

using format::BlockAction;
constexpr uint64_t kMiB = 1024 * 1024;

format::BlockRecord block(uint64_t t, BlockAction action, uint64_t address, uint64_t size,
                          uint32_t stack = 0, int device = 0) {
  format::BlockRecord r;
  r.time_ns = t;
  r.allocator = static_cast<uint32_t>(format::BlockAllocator::kPytorch);
  r.action = static_cast<uint32_t>(action);
  r.device = device;
  r.address = address;
  r.size = size;
  r.stack = stack;
  return r;
}

format::AllocRecord segment(uint64_t t, uint64_t address, uint64_t size, uint32_t stack) {
  format::AllocRecord r = test::alloc_at(t, 0, address, size);
  r.stack = stack;
  return r;
}

format::SampleRecord periodic_sample(uint64_t t) {
  format::SampleRecord s;
  s.time_ns = t;
  s.device = 0;
  s.reason = static_cast<uint32_t>(format::SampleReason::kPeriodic);
  return s;
}

// One segment, a block freed and one kept: the allocator holds 20 MiB, hands out 1 MiB.
std::vector<format::Record> one_segment() {
  return {segment(10, 0x100000000, 20 * kMiB, 1),
          block(11, BlockAction::kSegmentAlloc, 0x100000000, 20 * kMiB, 1),
          block(12, BlockAction::kAlloc, 0x100000000, 4 * kMiB, 2),
          block(13, BlockAction::kAlloc, 0x100400000, 1 * kMiB, 3),
          block(14, BlockAction::kFreeRequested, 0x100000000, 4 * kMiB),
          block(15, BlockAction::kFreeCompleted, 0x100000000, 4 * kMiB)};
}

TEST(BlockReplay, CountsLiveBlocksAndReportedSegmentsPerAllocatorAndDevice) {
  Replay replay;
  for (const auto& r : one_segment()) replay.apply(r);
  replay.finish();
  const TraceSummary& s = replay.summary();
  ASSERT_EQ(s.allocators.size(), 1u);
  const AllocatorUsage& a = s.allocators[0];
  EXPECT_EQ(a.allocator, 1u);
  EXPECT_EQ(a.device, 0);
  EXPECT_EQ(a.allocated_bytes, 1 * kMiB);
  EXPECT_EQ(a.reserved_bytes, 20 * kMiB);
  EXPECT_EQ(a.live_blocks, 1u);
  EXPECT_EQ(a.live_segments, 1u);
  EXPECT_EQ(a.peak_allocated_bytes, 5 * kMiB);
  EXPECT_EQ(a.peak_reserved_bytes, 20 * kMiB);
  EXPECT_EQ(a.block_events, 5u);
  ASSERT_EQ(s.block_sites.size(), 2u);
  const BlockSiteStats& freed = s.block_sites.at(block_site_key(1, 0, 2));
  EXPECT_EQ(freed.live_bytes, 0u);
  EXPECT_EQ(freed.allocations, 1u);
  const BlockSiteStats& kept = s.block_sites.at(block_site_key(1, 0, 3));
  EXPECT_EQ(kept.live_bytes, 1 * kMiB);
  EXPECT_EQ(kept.live_count, 1u);
  // The driver's view is unchanged: one 20 MiB allocation. Block events are not events.
  EXPECT_EQ(s.devices.at(0).live_bytes, 20 * kMiB);
  EXPECT_EQ(s.events, 1u);
  EXPECT_EQ(s.duration_ns, 15u);
  // The segment's site knows the allocator reported it.
  EXPECT_TRUE(s.sites.at(site_key(0, 1)).framework_segments);
  EXPECT_EQ(s.sites.at(site_key(0, 1)).framework_segment_bytes, 20 * kMiB);
}

TEST(BlockReplay, FeedsTheViewsFrameworkFiguresWithoutAReport) {
  Replay replay;
  for (const auto& r : one_segment()) replay.apply(r);
  replay.apply(periodic_sample(16));
  replay.finish();
  const auto& v = replay.summary().devices.at(0).views_at_exit;
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->tracked_bytes, 20 * kMiB);
  EXPECT_EQ(v->framework_allocated_bytes, 1 * kMiB);
  EXPECT_EQ(v->framework_reserved_bytes, 20 * kMiB);
  EXPECT_EQ(v->framework_cache_bytes(), static_cast<int64_t>(19 * kMiB));
  EXPECT_EQ(v->framework_time_ns, 16u);
}

TEST(BlockReplay, TheViewsHaveTheFiguresEvenWithoutASample) {
  Replay replay;
  for (const auto& r : one_segment()) replay.apply(r);
  replay.finish();
  const auto& v = replay.summary().devices.at(0).views_at_exit;
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->tracked_bytes, 20 * kMiB);
  EXPECT_EQ(v->framework_allocated_bytes, 1 * kMiB);
  EXPECT_EQ(v->framework_reserved_bytes, 20 * kMiB);
  EXPECT_EQ(v->time_ns, 15u);
}

TEST(BlockReplay, CachedIsWhatTheAllocatorHoldsFreeAndBlocksAreTheirOwnRows) {
  Replay replay;
  for (const auto& r : one_segment()) replay.apply(r);
  replay.apply(segment(20, 0x200000000, 3 * kMiB, 9));  // outside the allocator
  replay.finish();
  TraceSummary& s = replay.summary();
  classify_leaks(s);
  ASSERT_EQ(s.leaks.size(), 3u);
  // What the allocator holds free: one row, no stack, its segment count.
  EXPECT_EQ(s.leaks[0].leak_class, LeakClass::kCached);
  EXPECT_EQ(s.leaks[0].allocator, 1);
  EXPECT_EQ(s.leaks[0].stack, 0u);
  EXPECT_EQ(s.leaks[0].bytes, 19 * kMiB);
  EXPECT_EQ(s.leaks[0].resident_bytes, 19 * kMiB);
  EXPECT_EQ(s.leaks[0].count, 1u);
  // The driver allocation no allocator reported keeps its segment-level row.
  EXPECT_EQ(s.leaks[1].leak_class, LeakClass::kUnfreed);
  EXPECT_EQ(s.leaks[1].allocator, -1);
  EXPECT_EQ(s.leaks[1].stack, 9u);
  EXPECT_EQ(s.leaks[1].bytes, 3 * kMiB);
  // The block never freed, at its own site.
  EXPECT_EQ(s.leaks[2].leak_class, LeakClass::kUnfreed);
  EXPECT_EQ(s.leaks[2].allocator, 1);
  EXPECT_EQ(s.leaks[2].stack, 3u);
  EXPECT_EQ(s.leaks[2].bytes, 1 * kMiB);
  EXPECT_EQ(s.leaks[2].count, 1u);
  // Every row but teardown adds up to what was live at the end.
  uint64_t total = 0;
  for (const LeakGroup& g : s.leaks) total += g.resident_bytes;
  EXPECT_EQ(total, s.devices.at(0).live_bytes);
  EXPECT_EQ(leaked_on(s, 0), 4 * kMiB);
  EXPECT_STREQ(allocator_name(1), "pytorch");
  EXPECT_STREQ(allocator_name(2), "cupy");
  EXPECT_STREQ(allocator_name(0), "other");
}

// Ten steps: a temporary block comes and goes at stack 5, a block kept at stack 6, and the cache
// grows (a second segment, from stack 1) half-way. The leak is the kept blocks' site, not the
// segments'.
TEST(BlockReplay, AProbableLeakBehindTheCacheIsToldByBlockSite) {
  std::vector<format::Record> records;
  uint64_t t = 100;
  records.push_back(segment(t, 0x100000000, 20 * kMiB, 1));
  records.push_back(block(++t, BlockAction::kSegmentAlloc, 0x100000000, 20 * kMiB, 1));
  for (int step = 0; step < 10; ++step) {
    if (step == 5) {
      records.push_back(segment(++t, 0x200000000, 20 * kMiB, 1));
      records.push_back(block(++t, BlockAction::kSegmentAlloc, 0x200000000, 20 * kMiB, 1));
    }
    const uint64_t temp = step < 5 ? 0x101000000 : 0x201000000;
    records.push_back(block(++t, BlockAction::kAlloc, temp, 8 * kMiB, 5));
    const uint64_t kept =
        (step < 5 ? 0x100000000 : 0x200000000) + static_cast<uint64_t>(step % 5) * 2 * kMiB;
    records.push_back(block(++t, BlockAction::kAlloc, kept, 2 * kMiB, 6));
    records.push_back(block(++t, BlockAction::kFreeRequested, temp, 8 * kMiB));
    records.push_back(block(++t, BlockAction::kFreeCompleted, temp, 8 * kMiB));
  }
  Replay replay;
  replay.sample_sites_after(leak_sample_positions(records.size()));
  for (const auto& r : records) replay.apply(r);
  replay.finish();
  TraceSummary& s = replay.summary();
  classify_leaks(s);
  ASSERT_EQ(s.leaks.size(), 2u);
  EXPECT_EQ(s.leaks[0].leak_class, LeakClass::kCached);
  EXPECT_EQ(s.leaks[0].bytes, 20 * kMiB);  // 40 reserved, 20 in kept blocks
  EXPECT_EQ(s.leaks[0].count, 2u);
  EXPECT_EQ(s.leaks[1].leak_class, LeakClass::kProbableLeak);
  EXPECT_EQ(s.leaks[1].allocator, 1);
  EXPECT_EQ(s.leaks[1].stack, 6u);
  EXPECT_EQ(s.leaks[1].bytes, 20 * kMiB);
  EXPECT_EQ(s.leaks[1].count, 10u);
  EXPECT_GT(s.leaks[1].growth_bytes_per_s, 0);
  // The segments' site grew too, but it is not where the memory is kept: no row of its own.
  for (const LeakGroup& g : s.leaks) EXPECT_NE(g.stack, 1u);
}

TEST(BlockReplay, FreesOfBlocksNeverSeenAndSegmentsGivenBackAreHarmless) {
  Replay replay;
  replay.apply(block(1, BlockAction::kFreeRequested, 0x42, 512));
  replay.apply(block(2, BlockAction::kSegmentAlloc, 0x1000000, 2 * kMiB, 1));
  replay.apply(block(3, BlockAction::kAlloc, 0x1000000, 512, 2));
  replay.apply(block(4, BlockAction::kAlloc, 0x1000000, 1024, 2));  // its free was not reported
  replay.apply(block(5, BlockAction::kOom, 0, 1ull << 40, 3));
  replay.apply(block(6, BlockAction::kSegmentMap, 0x9000000, 4 * kMiB));
  replay.apply(block(7, BlockAction::kSegmentUnmap, 0x9000000, 2 * kMiB));
  replay.apply(block(8, BlockAction::kSegmentFree, 0x1000000, 2 * kMiB));
  replay.finish();
  const TraceSummary& s = replay.summary();
  ASSERT_EQ(s.allocators.size(), 1u);
  EXPECT_EQ(s.allocators[0].allocated_bytes, 1024u);
  EXPECT_EQ(s.allocators[0].live_blocks, 1u);
  EXPECT_EQ(s.allocators[0].reserved_bytes, 2 * kMiB);  // the mapped pages still mapped
  EXPECT_EQ(s.allocators[0].live_segments, 0u);
  EXPECT_EQ(s.allocators[0].peak_reserved_bytes, 6 * kMiB);
  EXPECT_EQ(s.allocators[0].ooms, 1u);
  EXPECT_EQ(s.block_sites.at(block_site_key(1, 0, 2)).allocations, 2u);
}

}  // namespace
}  // namespace gmt::analyzer
