// SPDX-License-Identifier: Apache-2.0
// The replay's analysis model: sites, temporaries and size classes, leak classes, the context of
// failed allocations and the timeline.
#include <gtest/gtest.h>

#include "analyzer/model/leak_classes.h"
#include "analyzer/model/replay.h"
#include "analyzer/model/timeline/timeline_builder.h"
#include "tests/unit/trace_bytes.h"

namespace gmt::analyzer {
namespace {

using format::MemoryKind;
using test::alloc_at;
using test::free_at;

format::AllocRecord alloc_from(uint64_t t, uint64_t address, uint64_t size, uint32_t stack) {
  format::AllocRecord r = alloc_at(t, 0, address, size);
  r.stack = stack;
  return r;
}

TEST(AnalysisModel, SitesCountTemporariesAndSizeClasses) {
  Replay replay;
  replay.apply(alloc_from(0, 0x1000, 1000, 7));
  replay.apply(free_at(500'000, 0x1000));  // freed within 1 ms: a temporary
  replay.apply(alloc_from(600'000, 0x1000, 1024, 7));
  replay.apply(free_at(5'000'000, 0x1000));  // 4.4 ms: not
  replay.apply(alloc_from(6'000'000, 0x2000, 4096, 7));
  replay.finish();
  const SiteStats& site = replay.summary().sites.at(site_key(0, 7));
  EXPECT_EQ(site.allocations, 3u);
  EXPECT_EQ(site.temporaries, 1u);
  EXPECT_EQ(site.live_bytes, 4096u);
  EXPECT_EQ(site.live_count, 1u);
  EXPECT_EQ(site.size_histogram[10], 1u);  // 1000 in [512, 1024)
  EXPECT_EQ(site.size_histogram[11], 1u);  // 1024 in [1024, 2048)
  EXPECT_EQ(site.size_histogram[13], 1u);  // 4096 in [4096, 8192)
}

TEST(AnalysisModel, FailedAllocationKeepsTheDeviceStateOfThatInstant) {
  Replay replay;
  replay.apply(alloc_from(1, 0x1000, 300, 1));
  replay.apply(alloc_from(2, 0x2000, 500, 2));
  replay.apply(alloc_from(3, 0x3000, 100, 1));
  format::AllocFailedRecord failed;
  failed.time_ns = 4;
  failed.device = 0;
  failed.api = format::Api::kCuMemAlloc;
  failed.size = 1 << 30;
  failed.error = 2;
  replay.apply(failed);
  replay.apply(free_at(5, 0x2000));
  ASSERT_EQ(replay.summary().failures.size(), 1u);
  const FailedAllocation& f = replay.summary().failures[0];
  EXPECT_EQ(f.time_ns, 4u);
  EXPECT_EQ(f.requested_bytes, 1u << 30);
  EXPECT_EQ(f.live_bytes, 900u);
  ASSERT_EQ(f.holders.size(), 2u);
  EXPECT_EQ(f.holders[0].stack, 2u);
  EXPECT_EQ(f.holders[0].bytes, 500u);
  EXPECT_EQ(f.holders[1].stack, 1u);
  EXPECT_EQ(f.holders[1].bytes, 400u);
  EXPECT_EQ(f.holders[1].count, 2u);
}

// With more sites than are kept, the holders are the ten holding the most on the failing device,
// most first, ties by stack id; other devices' and freed sites are not among them.
TEST(AnalysisModel, FailedAllocationKeepsTheTenLargestHolders) {
  Replay replay;
  uint64_t t = 1;
  uint64_t address = 0x100000;
  // Stacks 1 to 20 on device 0, holding (stack % 7 + 1) * 100 bytes: ties among them.
  for (uint32_t stack = 1; stack <= 20; ++stack) {
    replay.apply(alloc_from(t++, address += 0x1000, (stack % 7 + 1) * 100, stack));
  }
  // Device 1 holds more than any, and stack 21 on device 0 held the most but freed it.
  format::AllocRecord other = alloc_at(t++, 1, address += 0x1000, 10'000);
  other.stack = 30;
  replay.apply(other);
  replay.apply(alloc_from(t++, address += 0x1000, 9'000, 21));
  replay.apply(free_at(t++, address));
  format::AllocFailedRecord failed;
  failed.time_ns = t++;
  failed.device = 0;
  failed.size = 1 << 30;
  replay.apply(failed);
  ASSERT_EQ(replay.summary().failures.size(), 1u);
  std::vector<std::pair<uint32_t, uint64_t>> holders;
  for (const PeakSite& h : replay.summary().failures[0].holders)
    holders.emplace_back(h.stack, h.bytes);
  // 700: stacks 6, 13, 20; 600: 5, 12, 19; 500: 4, 11, 18; 400: 3 (10 and 17 left out).
  const std::vector<std::pair<uint32_t, uint64_t>> expected = {
      {6, 700},  {13, 700}, {20, 700}, {5, 600},  {12, 600},
      {19, 600}, {4, 500},  {11, 500}, {18, 500}, {3, 400}};
  EXPECT_EQ(holders, expected);
}

TEST(LeakClasses, KeepsGrowingNeedsSteadyGrowth) {
  EXPECT_TRUE(keeps_growing({0, 10, 20, 30, 40}));
  EXPECT_TRUE(keeps_growing({10, 10, 20, 20, 30}));  // up in half the intervals
  EXPECT_FALSE(keeps_growing({0, 0, 0, 0, 40}));     // grew once, at the end
  EXPECT_FALSE(keeps_growing({0, 10, 5, 20, 30}));   // went down
  EXPECT_FALSE(keeps_growing({10, 10, 10, 10}));
  EXPECT_FALSE(keeps_growing({}));
}

// A Python program's leaking list is freed when its modules are torn down at exit: the site
// that grew through the run is still a probable leak, with what it held before the end.
TEST(LeakClasses, GrowthFreedOnlyAtExitIsAProbableLeak) {
  TraceSummary trace;
  trace.sample_times = {10, 20, 30, 40, 50, 60};
  SiteStats leaking;
  leaking.device = 0;
  leaking.stack = 7;
  leaking.live_samples = {16, 32, 48, 64, 80, 0};
  leaking.live_count_samples = {1, 2, 3, 4, 5, 0};
  leaking.allocations = kLeakSamples;  // growth is judged of a site that allocated this often
  SiteStats steady;  // held the same until exit: not a leak, and freed: nothing to report
  steady.device = 0;
  steady.stack = 8;
  steady.live_samples = {50, 50, 50, 50, 50, 0};
  steady.live_count_samples = {1, 1, 1, 1, 1, 0};
  trace.sites[site_key(0, 7)] = leaking;
  trace.sites[site_key(0, 8)] = steady;
  classify_leaks(trace);
  ASSERT_EQ(trace.leaks.size(), 1u);
  const LeakGroup& g = trace.leaks[0];
  EXPECT_EQ(g.stack, 7u);
  EXPECT_EQ(g.leak_class, LeakClass::kProbableLeak);
  EXPECT_TRUE(g.freed_at_exit);
  EXPECT_EQ(g.bytes, 80u);
  EXPECT_EQ(g.resident_bytes, 80u);
  EXPECT_EQ(g.count, 5u);
  EXPECT_DOUBLE_EQ(g.growth_bytes_per_s, 64.0 / 40e-9);  // 64 bytes more in 40 ns
}

TEST(LeakClasses, SamplePositionsEndAtTheLastRecord) {
  EXPECT_EQ(leak_sample_positions(100),
            (std::vector<uint64_t>{9, 19, 29, 39, 49, 59, 69, 79, 89, 99}));
  EXPECT_EQ(leak_sample_positions(3), (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_TRUE(leak_sample_positions(0).empty());
}

TEST(LeakClasses, GrowingSitesTeardownAndUnfreedAreToldApart) {
  // Stack 1 leaks 10 bytes every step; stack 2 allocates once at the start and keeps it;
  // stack 3 is released by its context's teardown.
  std::vector<format::Record> records;
  format::AllocRecord torn = alloc_from(0, 0x9000, 64, 3);
  torn.context = 5;
  records.push_back(torn);
  records.push_back(alloc_from(1, 0x8000, 1000, 2));
  for (uint64_t step = 0; step < 20; ++step) {
    records.push_back(alloc_from(10 + step * 1'000'000'000, 0x10 + step, 10, 1));
  }
  format::ContextDestroyedRecord destroyed;
  destroyed.time_ns = 30'000'000'000;
  destroyed.id = 5;
  records.push_back(destroyed);
  Replay first;
  for (const auto& r : records) first.apply(r);
  first.finish();
  Replay second;
  second.sample_sites_after(leak_sample_positions(records.size()));
  for (const auto& r : records) second.apply(r);
  TraceSummary& summary = first.summary();
  summary.sample_times = second.summary().sample_times;
  for (auto& [key, site] : summary.sites)
    site.live_samples = second.summary().sites[key].live_samples;
  classify_leaks(summary);
  ASSERT_EQ(summary.leaks.size(), 3u);
  EXPECT_EQ(summary.leaks[0].stack, 2u);
  EXPECT_EQ(summary.leaks[0].leak_class, LeakClass::kUnfreed);
  EXPECT_EQ(summary.leaks[0].bytes, 1000u);
  EXPECT_EQ(summary.leaks[1].stack, 1u);
  EXPECT_EQ(summary.leaks[1].leak_class, LeakClass::kProbableLeak);
  EXPECT_EQ(summary.leaks[1].bytes, 200u);
  EXPECT_EQ(summary.leaks[1].count, 20u);
  // From 0 bytes after record 1 (time 1 ns) to 200 bytes at the last record (30 s).
  EXPECT_DOUBLE_EQ(summary.leaks[1].growth_bytes_per_s, 200.0 / ((30'000'000'000 - 1) / 1e9));
  EXPECT_EQ(summary.leaks[2].stack, 3u);
  EXPECT_EQ(summary.leaks[2].leak_class, LeakClass::kTeardown);
  EXPECT_EQ(summary.leaks[2].bytes, 64u);
}

TEST(Timeline, BucketsKeepTheirMaximumAndCarryTheLevel) {
  TimelineBuilder builder(100);
  builder.set(0, std::nullopt, 50, 10);
  builder.set(0, std::nullopt, 900, 120);  // a spike inside bucket 1
  builder.set(0, std::nullopt, 60, 130);
  builder.set(0, MemoryKind::kDevice, 60, 130);
  const Timeline t = builder.finish(450);
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices.at(0).resident, (std::vector<uint64_t>{50, 900, 60, 60, 60}));
  EXPECT_EQ(t.devices.at(0).by_kind.at(MemoryKind::kDevice),
            (std::vector<uint64_t>{0, 60, 60, 60, 60}));
}

TEST(Timeline, ResolutionIsRaisedToStayWithinTheBucketLimit) {
  EXPECT_EQ(timeline_resolution(1'000'000, 5'000'000), 1'000'000u);
  EXPECT_EQ(timeline_resolution(1, 10'000'000'000), 1'000'001u);
  EXPECT_LE(10'000'000'000 / timeline_resolution(1, 10'000'000'000) + 1, kMaxTimelineBuckets);
}

}  // namespace
}  // namespace gmt::analyzer
