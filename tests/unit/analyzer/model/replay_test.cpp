// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/replay.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

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
  replay.apply(alloc_at(2, -1, 0x2000, 1 << 30, MemoryKind::kVmmReservation));
  replay.apply(alloc_at(3, -1, 0x3000, 500, MemoryKind::kHostPinned));
  replay.apply(alloc_at(4, 0, 0x4000, 200, MemoryKind::kVmmPhysical));
  replay.apply(alloc_at(5, 0, 0x5000, 700, MemoryKind::kManaged));
  const TraceSummary& s = replay.summary();
  ASSERT_EQ(s.devices.size(), 1u);  // host memory and reservations belong to no device
  const DeviceSummary& d = s.devices.at(0);
  EXPECT_EQ(d.peak_bytes, 300u);
  EXPECT_EQ(d.live_bytes, 300u);
  EXPECT_EQ(d.live_count, 3u);
  EXPECT_EQ(d.alloc_count, 3u);
  EXPECT_EQ(d.by_kind.at(MemoryKind::kManaged).peak_bytes, 700u);
  EXPECT_EQ(d.by_kind.at(MemoryKind::kDevice).live_bytes, 100u);
  EXPECT_EQ(d.by_kind.at(MemoryKind::kVmmPhysical).live_bytes, 200u);
  EXPECT_EQ(s.process_kinds.at(MemoryKind::kHostPinned).peak_bytes, 500u);
  EXPECT_EQ(s.process_kinds.at(MemoryKind::kVmmReservation).live_bytes, 1u << 30);
}

format::FreeRecord free_with(uint64_t t, format::Api api, uint64_t address) {
  format::FreeRecord r = free_at(t, address);
  r.api = api;
  return r;
}

format::MapRecord map_at(uint64_t t, uint64_t address, uint64_t size, uint64_t handle) {
  format::MapRecord r;
  r.time_ns = t;
  r.address = address;
  r.size = size;
  r.handle = handle;
  return r;
}

format::UnmapRecord unmap_at(uint64_t t, uint64_t address, uint64_t size) {
  format::UnmapRecord r;
  r.time_ns = t;
  r.address = address;
  r.size = size;
  return r;
}

TEST(Replay, PhysicalVmmMemoryStaysUntilReleasedAndUnmapped) {
  Replay replay;
  const uint64_t handle = 0x77;  // handles may equal device addresses: a separate name space
  replay.apply(alloc_at(1, 0, 0x77, 64, MemoryKind::kDevice));
  replay.apply(alloc_at(2, 1, handle, 2 << 20, MemoryKind::kVmmPhysical));
  replay.apply(map_at(3, 0xa00000, 2 << 20, handle));
  replay.apply(map_at(4, 0xc00000, 2 << 20, handle));  // the same handle mapped twice
  format::RetainHandleRecord retain;
  retain.time_ns = 5;
  retain.handle = handle;
  replay.apply(retain);
  replay.apply(free_with(6, format::Api::kCuMemRelease, handle));
  replay.apply(free_with(7, format::Api::kCuMemRelease, handle));  // released, still mapped
  const DeviceSummary& d1 = replay.summary().devices.at(1);
  EXPECT_EQ(d1.live_bytes, 2u << 20);
  EXPECT_EQ(d1.by_kind.at(MemoryKind::kVmmMapping).live_bytes, 4u << 20);
  replay.apply(unmap_at(8, 0xa00000, 2 << 20));
  EXPECT_EQ(d1.live_bytes, 2u << 20);
  replay.apply(unmap_at(9, 0xc00000, 2 << 20));  // the last mapping: now the memory goes
  EXPECT_EQ(d1.live_bytes, 0u);
  EXPECT_EQ(d1.peak_bytes, 2u << 20);
  EXPECT_EQ(d1.free_count, 1u);
  EXPECT_EQ(d1.by_kind.at(MemoryKind::kVmmMapping).peak_bytes, 4u << 20);
  EXPECT_EQ(d1.by_kind.at(MemoryKind::kVmmMapping).live_bytes, 0u);
  // The device allocation at the handle's numeric value was never touched.
  EXPECT_EQ(replay.summary().devices.at(0).live_bytes, 64u);
  EXPECT_EQ(replay.summary().unmatched_frees, 0u);
}

TEST(Replay, HostVmmMemoryIsHostMemoryWithAHandleLifetime) {
  Replay replay;
  replay.apply(alloc_at(1, -1, 0x10, 2 << 20, MemoryKind::kHostVmm));  // NCCL's host probe
  replay.apply(map_at(2, 0x7000000, 2 << 20, 0x10));
  replay.apply(free_with(3, format::Api::kCuMemRelease, 0x10));
  const TraceSummary& s = replay.summary();
  EXPECT_TRUE(s.devices.empty());  // neither the memory nor its mapping is any device's
  EXPECT_EQ(s.process_kinds.at(MemoryKind::kHostVmm).live_bytes, 2u << 20);  // still mapped
  replay.apply(unmap_at(4, 0x7000000, 2 << 20));
  EXPECT_EQ(s.process_kinds.at(MemoryKind::kHostVmm).live_bytes, 0u);
  EXPECT_EQ(s.process_kinds.at(MemoryKind::kHostVmm).peak_bytes, 2u << 20);
  EXPECT_TRUE(s.devices.empty());
  EXPECT_EQ(s.unmatched_frees, 0u);
}

TEST(Replay, AnUnmapRangeEndsEveryMappingInsideIt) {
  Replay replay;
  replay.apply(alloc_at(1, 0, 1, 20 << 20, MemoryKind::kVmmPhysical));
  replay.apply(alloc_at(2, 0, 2, 20 << 20, MemoryKind::kVmmPhysical));
  replay.apply(map_at(3, 0x10000000, 20 << 20, 1));
  replay.apply(map_at(4, 0x10000000 + (20 << 20), 20 << 20, 2));
  replay.apply(free_with(5, format::Api::kCuMemRelease, 1));
  replay.apply(free_with(6, format::Api::kCuMemRelease, 2));
  replay.apply(unmap_at(7, 0x10000000, 40 << 20));
  const DeviceSummary& d = replay.summary().devices.at(0);
  EXPECT_EQ(d.live_bytes, 0u);
  EXPECT_EQ(d.peak_bytes, 40u << 20);
  EXPECT_EQ(d.free_count, 2u);
  EXPECT_EQ(d.live_count, 0u);
}

TEST(Replay, DestroyingAContextFreesWhatItOwnsAndNothingElse) {
  Replay replay;
  format::AllocRecord owned = alloc_at(1, 0, 0x1000, 100);
  owned.context = 1;
  format::AllocRecord other_context = alloc_at(2, 0, 0x2000, 10);
  other_context.context = 2;
  format::AllocRecord pool = alloc_at(3, 0, 0x3000, 1000, MemoryKind::kStreamOrdered);
  pool.context = 1;  // pools belong to the device: they survive the context
  format::AllocRecord pinned = alloc_at(4, -1, 0x4000, 5, MemoryKind::kHostPinned);
  pinned.context = 1;
  for (const auto& r : {owned, other_context, pool, pinned}) replay.apply(r);
  format::ContextDestroyedRecord destroyed;
  destroyed.time_ns = 5;
  destroyed.id = 1;
  replay.apply(destroyed);
  const TraceSummary& s = replay.summary();
  const DeviceSummary& d = s.devices.at(0);
  EXPECT_EQ(d.live_bytes, 1010u);
  EXPECT_EQ(d.live_count, 2u);
  EXPECT_EQ(d.teardown_free_count, 1u);
  EXPECT_EQ(d.free_count, 0u);
  EXPECT_EQ(s.process_kinds.at(MemoryKind::kHostPinned).live_bytes, 0u);
  // A later free of a torn-down address is not a double count.
  replay.apply(free_at(6, 0x1000));
  EXPECT_EQ(s.unmatched_frees, 1u);
  EXPECT_EQ(d.live_bytes, 1010u);
}

TEST(Replay, FreesAreMatchedByAddressWhateverApiAllocated) {
  Replay replay;
  replay.apply(alloc_at(1, 0, 0x1000, 100, MemoryKind::kStreamOrdered));
  replay.apply(free_with(2, format::Api::kCuMemFree, 0x1000));
  replay.apply(alloc_at(3, 0, 0x9000, 8, MemoryKind::kArray));
  replay.apply(free_with(4, format::Api::kCuMemFree, 0x9000));  // arrays are freed by handle
  replay.apply(free_with(5, format::Api::kCuArrayDestroy, 0x9000));
  const DeviceSummary& d = replay.summary().devices.at(0);
  EXPECT_EQ(d.free_count, 2u);
  EXPECT_EQ(d.live_bytes, 0u);
  EXPECT_EQ(replay.summary().unmatched_frees, 1u);
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

// Sites are (device, stack): looked up by stack id directly for small ids on the first
// devices, through the map for the rest (huge ids, high ordinals, host memory's -1). The same
// figures either way, and each pair its own site.
TEST(Replay, SitesAreKeptApartByDeviceAndStackWhateverTheirIds) {
  struct Case {
    int device;
    uint32_t stack;
  };
  const Case cases[] = {{0, 0},
                        {0, 3},
                        {1, 3},
                        {70, 3},
                        {0, 1u << 21},
                        {1, (1u << 21) + 1},
                        {1, (1u << 18) - 1},
                        {1, 1u << 18},
                        {-1, 3},
                        {0, 2}};
  Replay replay;
  uint64_t t = 0;
  uint64_t address = 0x10000;
  for (int round = 0; round < 3; ++round) {
    for (std::size_t i = 0; i < std::size(cases); ++i) {
      auto a = alloc_at(++t, cases[i].device, address += 0x1000, 100 * (i + 1),
                        cases[i].device < 0 ? MemoryKind::kHostPinned : MemoryKind::kDevice);
      a.stack = cases[i].stack;
      replay.apply(a);
    }
  }
  replay.apply(free_at(++t, address));  // the last one: device 0, stack 2
  replay.finish();
  const auto& sites = replay.summary().sites;
  ASSERT_EQ(sites.size(), std::size(cases));
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    const SiteStats& site = sites.at(site_key(cases[i].device, cases[i].stack));
    EXPECT_EQ(site.device, cases[i].device) << i;
    EXPECT_EQ(site.stack, cases[i].stack) << i;
    EXPECT_EQ(site.allocations, 3u) << i;
    const uint64_t live = i + 1 == std::size(cases) ? 2 : 3;
    EXPECT_EQ(site.live_count, live) << i;
    EXPECT_EQ(site.live_bytes, live * 100 * (i + 1)) << i;
  }
}

format::PhaseRecord phase_at(uint64_t t, format::PhaseAction action, uint32_t name) {
  format::PhaseRecord r;
  r.time_ns = t;
  r.tid = 100;
  r.action = static_cast<uint32_t>(action);
  r.name = name;
  return r;
}

// A phase's peak is the most a device held while it ran: what it held when the phase opened,
// raised by growth only (frees inside it lower nothing), for a device first seen inside it from
// zero; growth is the bytes at its end minus at its start, summed over its runs.
TEST(Replay, PhasesKeepEachDevicesMostAndGrowth) {
  using format::PhaseAction;
  Replay replay;
  format::NameRecord name;
  name.id = 1;
  name.text = "step";
  replay.apply(name);
  replay.apply(alloc_at(1, 0, 0x1000, 500));         // before: device 0 at 500
  replay.apply(phase_at(2, PhaseAction::kPush, 1));  // run 1 opens at 500
  replay.apply(free_at(3, 0x1000));                  // 0: a free first, the most stays 500
  replay.apply(alloc_at(4, 0, 0x2000, 300));         // 300
  replay.apply(alloc_at(5, 1, 0x3000, 700));         // device 1 first seen: 700
  replay.apply(free_at(6, 0x3000));                  // 0
  replay.apply(phase_at(7, PhaseAction::kPop, 0));   // run 1 closes: 0 at 300, 1 at 0
  replay.apply(phase_at(8, PhaseAction::kPush, 1));  // run 2 opens: 0 at 300, 1 at 0
  replay.apply(alloc_at(9, 0, 0x4000, 900));         // 1200: above run 1's most
  replay.apply(free_at(10, 0x4000));                 // 300
  replay.apply(alloc_at(11, 1, 0x5000, 100));        // 100
  replay.apply(phase_at(12, PhaseAction::kPop, 0));  // run 2 closes: 0 at 300, 1 at 100
  replay.finish();
  const auto& phases = replay.summary().phases;
  ASSERT_EQ(phases.size(), 2u);
  for (const PhaseStats& p : phases) {
    EXPECT_EQ(p.name, "step");
    EXPECT_EQ(p.calls, 2u) << p.device;
    EXPECT_EQ(p.first_start_ns, 2u) << p.device;
  }
  const PhaseStats& d0 = phases[0].device == 0 ? phases[0] : phases[1];
  const PhaseStats& d1 = phases[0].device == 0 ? phases[1] : phases[0];
  EXPECT_EQ(d0.device, 0);
  EXPECT_EQ(d0.peak_bytes, 1200u);
  EXPECT_EQ(d0.growth_bytes, (300 - 500) + (300 - 300));
  EXPECT_EQ(d1.device, 1);
  EXPECT_EQ(d1.peak_bytes, 700u);
  EXPECT_EQ(d1.growth_bytes, (0 - 0) + (100 - 0));
}

// Phases nest: each keeps the most of every stretch it was open for, across the phases that
// open and close inside it, and a device first seen in an inner phase counts in the outer one.
TEST(Replay, NestedPhasesKeepTheMostOfTheirWholeRun) {
  using format::PhaseAction;
  Replay replay;
  for (const auto& [id, text] : {std::pair{1u, "outer"}, std::pair{2u, "inner"}}) {
    format::NameRecord name;
    name.id = id;
    name.text = text;
    replay.apply(name);
  }
  replay.apply(alloc_at(1, 0, 0x1000, 1000));         // device 0 at 1000
  replay.apply(phase_at(2, PhaseAction::kPush, 1));   // outer opens at 1000
  replay.apply(alloc_at(3, 0, 0x2000, 500));          // 1500: outer's most so far
  replay.apply(free_at(4, 0x2000));                   // 1000
  replay.apply(phase_at(5, PhaseAction::kPush, 2));   // inner opens at 1000
  replay.apply(alloc_at(6, 0, 0x3000, 200));          // 1200
  replay.apply(alloc_at(7, 1, 0x4000, 50));           // device 1 first seen, in both
  replay.apply(phase_at(8, PhaseAction::kPop, 0));    // inner closes: 0 at 1200, 1 at 50
  replay.apply(alloc_at(9, 0, 0x5000, 2000));         // 3200, in outer only
  replay.apply(free_at(10, 0x5000));                  // 1200
  replay.apply(free_at(11, 0x1000));                  // 200
  replay.apply(phase_at(12, PhaseAction::kPop, 0));   // outer closes: 0 at 200, 1 at 50
  replay.apply(phase_at(13, PhaseAction::kPush, 2));  // inner again, at 200 and 50
  replay.apply(free_at(14, 0x4000));                  // device 1 only shrinks: its most is 50
  replay.finish();                                    // inner still open: closed at the end
  std::map<std::pair<std::string, int>, PhaseStats> by;
  for (const PhaseStats& p : replay.summary().phases) by[{p.name, p.device}] = p;
  ASSERT_EQ(by.size(), 4u);
  const PhaseStats& outer0 = by[{"outer", 0}];
  const PhaseStats& outer1 = by[{"outer", 1}];
  const PhaseStats& inner0 = by[{"inner", 0}];
  const PhaseStats& inner1 = by[{"inner", 1}];
  EXPECT_EQ(outer0.peak_bytes, 3200u);
  EXPECT_EQ(outer0.growth_bytes, 200 - 1000);
  EXPECT_EQ(outer1.peak_bytes, 50u);
  EXPECT_EQ(outer1.growth_bytes, 50);
  EXPECT_EQ(inner0.peak_bytes, 1200u);
  EXPECT_EQ(inner0.growth_bytes, (1200 - 1000) + (200 - 200));
  EXPECT_EQ(inner0.calls, 2u);
  EXPECT_EQ(inner1.peak_bytes, 50u);
  EXPECT_EQ(inner1.growth_bytes, (50 - 0) + (0 - 50));
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
  failed.kind = MemoryKind::kHostPinned;  // host memory fails on no device
  failed.device = -1;
  replay.apply(failed);
  EXPECT_EQ(replay.summary().failed_host_alloc_count, 1u);
  EXPECT_EQ(replay.summary().devices.size(), 1u);
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
