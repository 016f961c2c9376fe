// SPDX-License-Identifier: Apache-2.0
// The replay of a caching allocator's block events (format 4.2): its allocated and reserved bytes
// for the views, and leaks told by block site instead of by the site that grew the cache.
#include <gtest/gtest.h>

#include <algorithm>

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

format::AllocatorSettingsRecord max_split_size(uint64_t t, uint64_t bytes) {
  format::AllocatorSettingsRecord r;
  r.time_ns = t;
  r.allocator = static_cast<uint32_t>(format::BlockAllocator::kPytorch);
  r.max_split_size = bytes;
  r.roundup_divisions.assign(format::AllocatorSettingsRecord::kIntervals, 0);
  return r;
}

// PyTorch's settings, from the trace: a 24 MiB request in a 40 MiB segment, with blocks of 16 MiB
// and more never split, takes all 40 MiB; without the record, 24 MiB. The settings reach a pool
// made before them too (device 1's), and only the allocator they name.
TEST(BlockReplay, TheAllocatorsSettingsShapeItsBlocks) {
  for (const bool with_settings : {false, true}) {
    Replay replay;
    replay.apply(segment(1, 0x200000000, 40 * kMiB, 1));
    replay.apply(block(2, BlockAction::kSegmentAlloc, 0x200000000, 40 * kMiB, 1, 1));
    if (with_settings) replay.apply(max_split_size(3, 16 * kMiB));
    replay.apply(segment(4, 0x100000000, 40 * kMiB, 1));
    replay.apply(block(5, BlockAction::kSegmentAlloc, 0x100000000, 40 * kMiB, 1));
    replay.apply(block(6, BlockAction::kAlloc, 0x100000000, 24 * kMiB, 2));
    replay.apply(block(7, BlockAction::kAlloc, 0x200000000, 24 * kMiB, 2, 1));
    format::BlockRecord cupy = block(8, BlockAction::kAlloc, 0x300000000, 24 * kMiB, 2);
    cupy.allocator = static_cast<uint32_t>(format::BlockAllocator::kCupy);
    replay.apply(cupy);
    replay.finish();
    const TraceSummary& s = replay.summary();
    ASSERT_EQ(s.allocators.size(), 3u);
    const uint64_t pytorch = with_settings ? 40 * kMiB : 24 * kMiB;
    for (const AllocatorUsage& a : s.allocators) {
      EXPECT_EQ(a.allocated_bytes, a.allocator == 1 ? pytorch : 24 * kMiB)
          << a.allocator << " on " << a.device << " with settings " << with_settings;
    }
  }
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

// PyTorch records a segment's driver allocation before the allocator's events for the same
// request, and the sampler may read the views in between: the views at the peak have the
// allocator's figures once the request's segment and block are made, and nothing outside it.
TEST(BlockReplay, TheViewsAtThePeakCountTheRequestThatReachedIt) {
  for (const bool sampled : {true, false}) {
    SCOPED_TRACE(sampled ? "sampled between" : "no sample");
    Replay replay;
    replay.apply(segment(10, 0x100000000, 1024 * kMiB, 1));  // x
    replay.apply(block(11, BlockAction::kSegmentAlloc, 0x100000000, 1024 * kMiB, 1));
    replay.apply(block(12, BlockAction::kAlloc, 0x100000000, 1024 * kMiB, 2));
    replay.apply(segment(20, 0x200000000, 1024 * kMiB, 1));  // y = x * 2: the peak
    if (sampled) replay.apply(periodic_sample(21));
    replay.apply(block(22, BlockAction::kSegmentAlloc, 0x200000000, 1024 * kMiB, 1));
    replay.apply(block(23, BlockAction::kAlloc, 0x200000000, 1024 * kMiB, 3));
    replay.apply(block(30, BlockAction::kFreeRequested, 0x100000000, 1024 * kMiB));  // del x
    replay.apply(block(31, BlockAction::kFreeCompleted, 0x100000000, 1024 * kMiB));
    replay.finish();
    const DeviceSummary& d = replay.summary().devices.at(0);
    EXPECT_EQ(d.peak_bytes, 2048 * kMiB);
    EXPECT_EQ(d.peak_time_ns, 20u);
    ASSERT_TRUE(d.views_at_peak.has_value());
    const ViewValues& v = *d.views_at_peak;
    EXPECT_EQ(v.tracked_bytes, 2048 * kMiB);
    EXPECT_EQ(v.framework_allocated_bytes, 2048 * kMiB);
    EXPECT_EQ(v.framework_reserved_bytes, 2048 * kMiB);
    EXPECT_EQ(v.framework_time_ns, 23u);
    EXPECT_EQ(v.outside_framework_bytes(), 0);
    EXPECT_EQ(v.framework_cache_bytes(), 0);
    EXPECT_EQ(v.time_ns, sampled ? 21u : 23u);
    // At exit, after del x: y's block, both segments (the sample's, when there is one, are
    // those of its own moment: the last sample is the exit's views).
    if (sampled) continue;
    ASSERT_TRUE(d.views_at_exit.has_value());
    EXPECT_EQ(d.views_at_exit->framework_allocated_bytes, 1024 * kMiB);
    EXPECT_EQ(d.views_at_exit->framework_reserved_bytes, 2048 * kMiB);
    EXPECT_EQ(d.views_at_exit->outside_framework_bytes(), 0);
  }
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

// Expandable segments: the free cache lies in mapped pages, not segments. Its row counts the
// runs of them (adjacent mappings make one run), as it counts segments otherwise.
TEST(BlockReplay, TheFreeCacheOfExpandableSegmentsCountsItsRunsOfMappedPages) {
  Replay replay;
  replay.apply(block(1, BlockAction::kSegmentMap, 0x9000000, 8 * kMiB));
  replay.apply(block(2, BlockAction::kSegmentMap, 0x9800000, 4 * kMiB));  // joins the first run
  replay.apply(block(3, BlockAction::kSegmentMap, 0xA000000, 2 * kMiB));  // a run of its own
  replay.apply(block(4, BlockAction::kAlloc, 0x9000000, 2 * kMiB, 5));
  replay.finish();
  TraceSummary& s = replay.summary();
  classify_leaks(s);
  ASSERT_EQ(s.allocators.size(), 1u);
  EXPECT_EQ(s.allocators[0].live_segments, 2u);
  const auto cached = std::find_if(s.leaks.begin(), s.leaks.end(), [](const LeakGroup& g) {
    return g.leak_class == LeakClass::kCached;
  });
  ASSERT_NE(cached, s.leaks.end());
  EXPECT_EQ(cached->bytes, 12 * kMiB);  // 14 mapped, 2 in the block
  EXPECT_EQ(cached->count, 2u);
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
  EXPECT_EQ(s.allocators[0].live_segments, 1u);         // the run of pages left mapped
  EXPECT_EQ(s.allocators[0].peak_reserved_bytes, 6 * kMiB);
  EXPECT_EQ(s.allocators[0].ooms, 1u);
  EXPECT_EQ(s.block_sites.at(block_site_key(1, 0, 2)).allocations, 2u);
}

}  // namespace
}  // namespace gmt::analyzer

namespace gmt::analyzer {
namespace {

format::AllocFailedRecord failed(uint64_t t, uint64_t size) {
  format::AllocFailedRecord r;
  r.time_ns = t;
  r.device = 0;
  r.kind = format::MemoryKind::kDevice;
  r.api = format::Api::kCuMemAlloc;
  r.size = size;
  r.error = 2;
  return r;
}

// A 3 MiB allocation of another library (stack 9) beside one_segment(): the peak, 23 MiB, is
// reached by the segment; its users hold the most (5 MiB) after the second block.
TEST(BlockPeak, LiveBlocksBySiteAndTheFreeCacheReplaceTheSegmentsAtThePeak) {
  Replay replay;
  replay.apply(segment(5, 0x900000000, 3 * kMiB, 9));
  for (const auto& r : one_segment()) replay.apply(r);
  replay.finish();
  const DeviceSummary& d = replay.summary().devices.at(0);
  EXPECT_EQ(d.peak_bytes, 23 * kMiB);
  // The driver's rows are unchanged: the segment by the stack that grew the cache.
  ASSERT_EQ(d.peak_sites.size(), 2u);
  EXPECT_EQ(d.peak_sites[0].stack, 1u);
  EXPECT_EQ(d.peak_sites[0].bytes, 20 * kMiB);
  EXPECT_EQ(d.peak_sites[0].allocator, -1);
  ASSERT_EQ(d.peak_block_sites.size(), 4u);
  const PeakSite& cache = d.peak_block_sites[0];
  EXPECT_TRUE(cache.cache);
  EXPECT_EQ(cache.allocator, 1);
  EXPECT_EQ(cache.stack, 0u);
  EXPECT_EQ(cache.bytes, 15 * kMiB);
  EXPECT_EQ(cache.count, 1u);  // segments
  const PeakSite& block = d.peak_block_sites[1];
  EXPECT_FALSE(block.cache);
  EXPECT_EQ(block.allocator, 1);
  EXPECT_EQ(block.stack, 2u);
  EXPECT_EQ(block.bytes, 4 * kMiB);
  EXPECT_EQ(block.count, 1u);
  const PeakSite& other = d.peak_block_sites[2];
  EXPECT_EQ(other.allocator, -1);
  EXPECT_EQ(other.stack, 9u);
  EXPECT_EQ(other.bytes, 3 * kMiB);
  EXPECT_EQ(d.peak_block_sites[3].stack, 3u);
  EXPECT_EQ(d.peak_block_sites[3].bytes, 1 * kMiB);
  EXPECT_EQ(d.peak_block_sites[3].allocator, 1);
  uint64_t total = 0;
  for (const PeakSite& s : d.peak_block_sites) total += s.bytes;
  EXPECT_EQ(total, d.peak_bytes);
  EXPECT_EQ(&d.shown_peak_sites(), &d.peak_block_sites);
}

// A later, higher peak takes the rows again, when its users hold the most before the next
// driver event; a smaller block after a free changes nothing, nor does what follows that event.
TEST(BlockPeak, TheRowsAreWhenTheUsersHeldTheMostAtTheLastNewPeak) {
  Replay replay;
  for (const auto& r : one_segment()) replay.apply(r);
  replay.apply(segment(20, 0x200000000, 2 * kMiB, 4));
  replay.apply(block(21, BlockAction::kSegmentAlloc, 0x200000000, 2 * kMiB, 4));
  replay.apply(block(22, BlockAction::kAlloc, 0x200000000, 512 * 1024, 5));
  replay.apply(block(23, BlockAction::kAlloc, 0x200080000, 512 * 1024, 5));
  replay.apply(block(24, BlockAction::kFreeRequested, 0x200080000, 512 * 1024));
  replay.apply(block(25, BlockAction::kAlloc, 0x200080000, 256 * 1024, 6));
  replay.apply(test::free_at(26, 0x900000000));  // a driver event: the plateau ends
  replay.apply(block(27, BlockAction::kAlloc, 0x200100000, 1 * kMiB, 6));
  replay.finish();
  const DeviceSummary& d = replay.summary().devices.at(0);
  EXPECT_EQ(d.peak_bytes, 22 * kMiB);
  ASSERT_EQ(d.peak_block_sites.size(), 3u);
  EXPECT_TRUE(d.peak_block_sites[0].cache);
  EXPECT_EQ(d.peak_block_sites[0].bytes, 20 * kMiB);
  EXPECT_EQ(d.peak_block_sites[0].count, 2u);
  EXPECT_EQ(d.peak_block_sites[1].stack, 3u);
  EXPECT_EQ(d.peak_block_sites[1].bytes, 1 * kMiB);
  EXPECT_EQ(d.peak_block_sites[2].stack, 5u);
  EXPECT_EQ(d.peak_block_sites[2].bytes, 1 * kMiB);
  EXPECT_EQ(d.peak_block_sites[2].count, 2u);
}

// Segments the driver's records do not hold (expandable segments map pages into a reservation)
// leave the allocator's segments as they are; a trace without blocks has no block rows.
TEST(BlockPeak, WithoutTheSegmentsDriverAllocationsOrWithoutBlocksThePeakKeepsItsSites) {
  Replay unmatched;
  unmatched.apply(segment(10, 0x100000000, 20 * kMiB, 1));
  unmatched.apply(block(11, BlockAction::kSegmentAlloc, 0x700000000, 2 * kMiB, 1));
  unmatched.apply(block(12, BlockAction::kAlloc, 0x700000000, 1 * kMiB, 2));
  unmatched.finish();
  EXPECT_TRUE(unmatched.summary().devices.at(0).peak_block_sites.empty());
  EXPECT_EQ(unmatched.summary().devices.at(0).shown_peak_sites().size(), 1u);

  Replay plain;
  plain.apply(segment(10, 0x100000000, 20 * kMiB, 1));
  plain.finish();
  EXPECT_TRUE(plain.summary().devices.at(0).peak_block_sites.empty());
}

// Five 4 MiB blocks fill a 20 MiB segment; the second and fourth are freed (8 MiB free, in two
// 4 MiB holes). A 6 MiB request needs a new segment, the driver refuses it, the allocator
// reports its OOM.
std::vector<format::Record> fragmented_cache(uint64_t second_freed) {
  std::vector<format::Record> records = {
      segment(10, 0x100000000, 20 * kMiB, 1),
      block(11, BlockAction::kSegmentAlloc, 0x100000000, 20 * kMiB, 1)};
  for (uint64_t i = 0; i < 5; ++i) {
    records.push_back(
        block(12 + i, BlockAction::kAlloc, 0x100000000 + i * 4 * kMiB, 4 * kMiB, i == 4 ? 3 : 2));
  }
  records.push_back(block(20, BlockAction::kFreeRequested, 0x100400000, 4 * kMiB));
  records.push_back(
      block(21, BlockAction::kFreeRequested, 0x100000000 + second_freed * 4 * kMiB, 4 * kMiB));
  records.push_back(failed(22, 20 * kMiB));
  records.push_back(block(23, BlockAction::kOom, 0, 6 * kMiB, 7));
  return records;
}

TEST(BlockOom, TheHoldersAreBlocksAndTheCacheAndAFragmentedCacheIsTold) {
  Replay replay;
  for (const auto& r : fragmented_cache(3)) replay.apply(r);
  replay.finish();
  ASSERT_EQ(replay.summary().failures.size(), 1u);
  const FailedAllocation& f = replay.summary().failures[0];
  EXPECT_EQ(f.requested_bytes, 20 * kMiB);  // the driver's: a segment
  EXPECT_EQ(f.allocator, 1);
  EXPECT_EQ(f.allocator_requested_bytes, 6 * kMiB);
  EXPECT_EQ(f.cache_free_bytes, 8 * kMiB);
  EXPECT_EQ(f.largest_free_block_bytes, 4 * kMiB);
  EXPECT_TRUE(f.fragmented);
  ASSERT_EQ(f.holders.size(), 3u);
  EXPECT_EQ(f.holders[0].stack, 2u);
  EXPECT_EQ(f.holders[0].bytes, 8 * kMiB);
  EXPECT_EQ(f.holders[0].count, 2u);
  EXPECT_EQ(f.holders[0].allocator, 1);
  EXPECT_TRUE(f.holders[1].cache);
  EXPECT_EQ(f.holders[1].bytes, 8 * kMiB);
  EXPECT_EQ(f.holders[2].stack, 3u);
  EXPECT_EQ(f.holders[2].bytes, 4 * kMiB);
}

TEST(BlockOom, AdjacentFreeBlocksAreOneFreeRangeAndNoFragmentation) {
  Replay replay;
  for (const auto& r : fragmented_cache(2)) replay.apply(r);
  replay.finish();
  ASSERT_EQ(replay.summary().failures.size(), 1u);
  const FailedAllocation& f = replay.summary().failures[0];
  EXPECT_EQ(f.cache_free_bytes, 8 * kMiB);
  EXPECT_EQ(f.largest_free_block_bytes, 8 * kMiB);
  EXPECT_FALSE(f.fragmented);
}

// An allocation that succeeds in between: the OOM is not that failure's.
TEST(BlockOom, AnOomAfterASuccessfulAllocationNamesNoEarlierFailure) {
  Replay replay;
  for (const auto& r : one_segment()) replay.apply(r);
  replay.apply(failed(20, 40 * kMiB));
  replay.apply(segment(21, 0x300000000, 2 * kMiB, 4));
  replay.apply(block(22, BlockAction::kOom, 0, 30 * kMiB, 7));
  replay.finish();
  ASSERT_EQ(replay.summary().failures.size(), 1u);
  EXPECT_EQ(replay.summary().failures[0].allocator, -1);
  EXPECT_EQ(replay.summary().failures[0].holders[0].allocator, -1);
}

TEST(BlockTimeline, FrameworkAllocatedAndReservedAreSeriesOfTheDevice) {
  Replay replay;
  replay.record_timeline(10);
  replay.apply(segment(5, 0x900000000, 3 * kMiB, 9));
  for (const auto& r : one_segment()) replay.apply(r);
  replay.finish();
  const DeviceTimeline& t = replay.summary().timeline.devices.at(0);
  // Buckets of 10 ns: [0, 10) before any block, [10, 20) with them all.
  EXPECT_EQ(t.framework_allocated, (std::vector<uint64_t>{0, 5 * kMiB}));
  EXPECT_EQ(t.framework_reserved, (std::vector<uint64_t>{0, 20 * kMiB}));
  EXPECT_EQ(t.resident, (std::vector<uint64_t>{3 * kMiB, 23 * kMiB}));

  Replay plain;
  plain.record_timeline(10);
  plain.apply(segment(5, 0x900000000, 3 * kMiB, 9));
  plain.finish();
  EXPECT_TRUE(plain.summary().timeline.devices.at(0).framework_reserved.empty());
}

}  // namespace
}  // namespace gmt::analyzer

namespace gmt::analyzer {
namespace {

format::AllocFailedRecord failed_on(uint64_t t, uint64_t size, uint64_t thread) {
  format::AllocFailedRecord r = failed(t, size);
  r.thread = thread;
  return r;
}

// PyTorch's order for one request that does not fit: cudaMalloc fails, the allocator gives its
// free segments back and asks again, which fails too, and then it reports its OOM. One failed
// request, its retry folded into it with what was released; a request after the OOM, or on
// another thread, is another failure.
TEST(BlockOom, TheRetriesOfOneRequestAreOneFailure) {
  Replay replay;
  for (const auto& r : one_segment()) replay.apply(r);
  replay.apply(segment(16, 0x200000000, 2 * kMiB, 1));  // a segment left free in the cache
  replay.apply(block(17, BlockAction::kSegmentAlloc, 0x200000000, 2 * kMiB, 1));
  replay.apply(failed_on(20, 40 * kMiB, 100));
  replay.apply(block(21, BlockAction::kSegmentFree, 0x200000000, 2 * kMiB));
  replay.apply(test::free_at(22, 0x200000000));
  replay.apply(failed_on(23, 40 * kMiB, 100));
  replay.apply(block(24, BlockAction::kOom, 0, 40 * kMiB));
  replay.apply(failed_on(30, 40 * kMiB, 100));  // the program's next request
  replay.apply(failed_on(31, 40 * kMiB, 200));  // another thread's
  replay.finish();
  const TraceSummary& t = replay.summary();
  EXPECT_EQ(t.devices.at(0).failed_alloc_count, 3u);
  ASSERT_EQ(t.failures.size(), 3u);
  const FailedAllocation& f = t.failures[0];
  EXPECT_EQ(f.time_ns, 20u);
  EXPECT_EQ(f.requested_bytes, 40 * kMiB);
  ASSERT_EQ(f.retries.size(), 1u);
  EXPECT_EQ(f.retries[0].time_ns, 23u);
  EXPECT_EQ(f.retries[0].released_bytes, 2 * kMiB);
  EXPECT_EQ(f.retries[0].error, 2u);
  EXPECT_EQ(f.released_bytes(), 2 * kMiB);
  // The state of its last attempt, with the allocator's figures.
  EXPECT_EQ(f.live_bytes, 20 * kMiB);
  EXPECT_EQ(f.allocator, static_cast<int>(format::BlockAllocator::kPytorch));
  EXPECT_EQ(f.allocator_requested_bytes, 40 * kMiB);
  EXPECT_EQ(f.cache_free_bytes, 19 * kMiB);
  EXPECT_TRUE(t.failures[1].retries.empty());
  EXPECT_EQ(t.failures[1].time_ns, 30u);
  EXPECT_TRUE(t.failures[2].retries.empty());
  EXPECT_EQ(t.failures[2].time_ns, 31u);
}

// An allocation that succeeds on the thread ends its request: the same size failing again is a
// new one.
TEST(BlockOom, AnAllocationBetweenTwoFailuresMakesThemTwoRequests) {
  Replay replay;
  replay.apply(failed_on(20, 40 * kMiB, 100));
  format::AllocRecord a = test::alloc_at(21, 0, 0x300000000, kMiB);
  replay.apply(a);
  replay.apply(failed_on(22, 40 * kMiB, 100));
  replay.finish();
  ASSERT_EQ(replay.summary().failures.size(), 2u);
  EXPECT_TRUE(replay.summary().failures[0].retries.empty());
  EXPECT_EQ(replay.summary().devices.at(0).failed_alloc_count, 2u);
}

}  // namespace
}  // namespace gmt::analyzer
