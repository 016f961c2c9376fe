#include "analyzer/replay.h"

#include <gtest/gtest.h>

#include "tests/unit/trace_bytes.h"

namespace gmt::analyzer {
namespace {

using format::MemoryKind;
using test::alloc_at;
using test::free_at;

TEST(Replay, TracksPeakAndLiveBytesPerDevice) {
  Replay replay;
  replay.apply(alloc_at(10, 0, 0xa000, 100));
  replay.apply(alloc_at(20, 1, 0xb000, 1000));
  replay.apply(alloc_at(30, 0, 0xc000, 50));  // device 0 peaks here at 150
  replay.apply(free_at(40, 0xa000));
  replay.apply(alloc_at(50, 0, 0xa000, 70));  // the address is reused: 120 < 150
  replay.apply(free_at(60, 0xb000));
  const TraceSummary& s = replay.summary();
  ASSERT_EQ(s.devices.size(), 2u);
  const DeviceSummary& d0 = s.devices.at(0);
  EXPECT_EQ(d0.peak_bytes, 150u);
  EXPECT_EQ(d0.peak_time_ns, 30u);
  EXPECT_EQ(d0.live_bytes, 120u);
  EXPECT_EQ(d0.live_count, 2u);
  EXPECT_EQ(d0.alloc_count, 3u);
  EXPECT_EQ(d0.free_count, 1u);
  const DeviceSummary& d1 = s.devices.at(1);
  EXPECT_EQ(d1.peak_bytes, 1000u);
  EXPECT_EQ(d1.peak_time_ns, 20u);
  EXPECT_EQ(d1.live_bytes, 0u);
  EXPECT_EQ(d1.free_count, 1u);
  EXPECT_EQ(s.events, 6u);
  EXPECT_EQ(s.duration_ns, 60u);
}

TEST(Replay, HostAndAddressSpaceKindsDoNotCountTowardDeviceUsage) {
  Replay replay;
  replay.apply(alloc_at(1, 0, 0x1000, 100, MemoryKind::kDevice));
  replay.apply(alloc_at(2, 0, 0x2000, 1 << 30, MemoryKind::kVmmReservation));
  replay.apply(alloc_at(3, 0, 0x3000, 500, MemoryKind::kHostPinned));
  replay.apply(alloc_at(4, 0, 0x4000, 200, MemoryKind::kVmmPhysical));
  const DeviceSummary& d = replay.summary().devices.at(0);
  EXPECT_EQ(d.peak_bytes, 300u);
  EXPECT_EQ(d.live_bytes, 300u);
  EXPECT_EQ(d.live_count, 4u);
}

TEST(Replay, FreeOfAnUnknownAddressIsCountedNotApplied) {
  Replay replay;
  replay.apply(alloc_at(1, 0, 0x1000, 100));
  replay.apply(free_at(2, 0x9999));
  EXPECT_EQ(replay.summary().unmatched_frees, 1u);
  EXPECT_EQ(replay.summary().devices.at(0).live_bytes, 100u);
  EXPECT_EQ(replay.summary().devices.at(0).free_count, 0u);
}

TEST(Replay, AnAddressAllocatedTwiceReplacesTheMissedAllocation) {
  Replay replay;
  replay.apply(alloc_at(1, 0, 0x1000, 100));
  replay.apply(alloc_at(2, 0, 0x1000, 40));
  const DeviceSummary& d = replay.summary().devices.at(0);
  EXPECT_EQ(d.live_bytes, 40u);
  EXPECT_EQ(d.live_count, 1u);
  EXPECT_EQ(d.peak_bytes, 100u);
}

TEST(Replay, FailedAllocationsAreCountedPerDevice) {
  Replay replay;
  format::AllocFailedRecord failed;
  failed.device = 2;
  failed.size = 1 << 30;
  failed.error = 2;
  replay.apply(failed);
  EXPECT_EQ(replay.summary().devices.at(2).failed_alloc_count, 1u);
  EXPECT_EQ(replay.summary().devices.at(2).peak_bytes, 0u);
}

TEST(Replay, EndRecordMarksANormalExit) {
  Replay replay;
  EXPECT_EQ(replay.summary().end, TraceEnd::kCut);
  format::EndRecord end;
  end.time_ns = 99;
  replay.apply(end);
  EXPECT_EQ(replay.summary().end, TraceEnd::kExited);
  EXPECT_EQ(replay.summary().duration_ns, 99u);
}

}  // namespace
}  // namespace gmt::analyzer
