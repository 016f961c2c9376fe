// SPDX-License-Identifier: Apache-2.0
// Virtual memory management, as PyTorch's expandable segments and NCCL use it: the physical
// memory of a cuMemCreate handle occupies its device from creation until the handle has been
// released (once more per cuMemRetainAllocationHandle) AND no mapping of it is left; a handle
// mapped twice is counted once; reservations and mappings are address space, never usage.
//
// Each sequence allocates ordinary device memory at the moments that matter, sized so that the
// device's peak comes out different for every wrong lifetime (dropped at release, dropped at the
// first unmap, never dropped): the peak tells which one the analyzer applied.
#include <gtest/gtest.h>

#include "tests/integration/interception/kind_expectations.h"
#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

constexpr const char* kKindOps = "kind_ops_procaddress_12000";

class VmmLifetime : public TracedRun {};

TEST_F(VmmLifetime, PhysicalMemoryCountsFromCreateUntilRelease) {
  const json rep = traced_report(
      kKindOps, {"cuMemCreate:h:" + mib(4), "cuMemCreate:g:" + mib(2), "cuMemRelease:h"});
  EXPECT_EQ(number(rep, "traces.0.unmatched_frees"), 0);
  const json& d = device(rep, 0);
  expect_totals(d, {.peak_bytes = 6 * kMiB,
                    .live_at_exit_bytes = 2 * kMiB,
                    .live_at_exit_count = 1,
                    .alloc_count = 2,
                    .free_count = 1});
  expect_kinds(d, {{"vmm_physical", 6 * kMiB, 2 * kMiB}});
}

TEST_F(VmmLifetime, ReservationsAreReportedPerProcessAndAreNeverUsage) {
  const json rep =
      traced_report(kKindOps, {"cuMemAlloc:a:" + mib(1), "cuMemAddressReserve:r:" + mib(64),
                               "cuMemAddressReserve:s:" + mib(32), "cuMemAddressFree:s"});
  expect_process_kind(rep, "vmm_reservation", 96 * kMiB, 64 * kMiB);
  const json& d = device(rep, 0);
  expect_totals(d, {.peak_bytes = 1 * kMiB,
                    .live_at_exit_bytes = 1 * kMiB,
                    .live_at_exit_count = 1,
                    .alloc_count = 1});
  expect_kinds(d, {{"device", 1 * kMiB, 1 * kMiB}});
}

TEST_F(VmmLifetime, HandleMappedTwiceCountsOnceUntilReleasedAndUnmappedEverywhere) {
  // h (8 MiB) is mapped at both halves of r, then released while still mapped.
  //   a 1 MiB after the release:           h still counts -> 9 MiB
  //   b 1 MiB after unmapping one half:    h still counts -> 10 MiB (the peak)
  //   c 2 MiB after unmapping the other:   h is gone      -> 4 MiB
  // Dropping h at the release would make the peak 8 MiB, at the first unmap 9 MiB, never 12 MiB.
  const json rep = traced_report(
      kKindOps, {"cuMemAddressReserve:r:" + mib(16), "cuMemCreate:h:" + mib(8),
                 "cuMemMap:r:0:" + mib(8) + ":h", "cuMemMap:r:" + mib(8) + ":" + mib(8) + ":h",
                 "cuMemRelease:h", "cuMemAlloc:a:" + mib(1), "cuMemUnmap:r:0:" + mib(8),
                 "cuMemAlloc:b:" + mib(1), "cuMemUnmap:r:" + mib(8) + ":" + mib(8),
                 "cuMemAlloc:c:" + mib(2), "cuMemAddressFree:r"});
  EXPECT_EQ(number(rep, "traces.0.unmatched_frees"), 0);
  const json& d = device(rep, 0);
  EXPECT_EQ(number(d, "peak_bytes"), 10 * kMiB);
  EXPECT_EQ(number(d, "live_at_exit_bytes"), 4 * kMiB);
  EXPECT_EQ(number(d, "live_at_exit_count"), 3);
  EXPECT_EQ(number(d, "alloc_count"), 4);  // h, a, b, c: mappings are not allocations
  // When the handle's end is counted as its free (at the release or at the last unmap) is the
  // analyzer's choice; it is counted once.
  EXPECT_EQ(number(d, "free_count") + number(d, "live_at_exit_count"), number(d, "alloc_count"));
  expect_kinds(d, {{"device", 4 * kMiB, 4 * kMiB},
                   {"vmm_physical", 8 * kMiB, 0},
                   {"vmm_mapping", 16 * kMiB, 0}});
  expect_process_kind(rep, "vmm_reservation", 16 * kMiB, 0);
}

TEST_F(VmmLifetime, RetainedHandleNeedsOneMoreRelease) {
  // h is retained through its mapping, released once and unmapped: the retained reference
  // keeps it (a: 5 MiB). The second release ends it (b: 3 MiB, 7 MiB if it were still there).
  const json rep = traced_report(
      kKindOps, {"cuMemAddressReserve:r:" + mib(8), "cuMemCreate:h:" + mib(4),
                 "cuMemMap:r:0:" + mib(4) + ":h", "cuMemRetainAllocationHandle:h2:r:0",
                 "cuMemRelease:h", "cuMemUnmap:r:0:" + mib(4), "cuMemAlloc:a:" + mib(1),
                 "cuMemRelease:h2", "cuMemAlloc:b:" + mib(2), "cuMemAddressFree:r"});
  const json& d = device(rep, 0);
  EXPECT_EQ(number(d, "peak_bytes"), 5 * kMiB);
  EXPECT_EQ(number(d, "live_at_exit_bytes"), 3 * kMiB);
  EXPECT_EQ(number(d, "live_at_exit_count"), 2);
  EXPECT_EQ(number(d, "alloc_count"), 3);
  EXPECT_EQ(number(d, "free_count") + number(d, "live_at_exit_count"), number(d, "alloc_count"));
  expect_kinds(d, {{"device", 3 * kMiB, 3 * kMiB},
                   {"vmm_physical", 4 * kMiB, 0},
                   {"vmm_mapping", 4 * kMiB, 0}});
}

TEST_F(VmmLifetime, OneUnmapEndsEveryMappingInsideItsRange) {
  // h1 at 0 and 4 MiB, h2 at 2 MiB, both released; one cuMemUnmap of [0, 6 MiB) ends all three
  // mappings, so both handles go: a 5 MiB is then the peak (7 or 9 MiB if one or both stayed).
  const json rep = traced_report(
      kKindOps,
      {"cuMemAddressReserve:r:" + mib(16), "cuMemCreate:h1:" + mib(2), "cuMemCreate:h2:" + mib(2),
       "cuMemMap:r:0:" + mib(2) + ":h1", "cuMemMap:r:" + mib(2) + ":" + mib(2) + ":h2",
       "cuMemMap:r:" + mib(4) + ":" + mib(2) + ":h1", "cuMemRelease:h1", "cuMemRelease:h2",
       "cuMemUnmap:r:0:" + mib(6), "cuMemAlloc:a:" + mib(5), "cuMemAddressFree:r"});
  const json& d = device(rep, 0);
  EXPECT_EQ(number(d, "peak_bytes"), 5 * kMiB);
  EXPECT_EQ(number(d, "live_at_exit_bytes"), 5 * kMiB);
  EXPECT_EQ(number(d, "live_at_exit_count"), 1);
  EXPECT_EQ(number(d, "alloc_count"), 3);
  expect_kinds(d, {{"device", 5 * kMiB, 5 * kMiB},
                   {"vmm_physical", 4 * kMiB, 0},
                   {"vmm_mapping", 6 * kMiB, 0}});
}

TEST_F(VmmLifetime, PhysicalMemoryCountsOnTheDeviceItWasCreatedFor) {
  // Device 0 is current, but h is created for device 1 (prop.location.id): it and its mapping
  // belong to device 1.
  const json rep =
      traced_report(kKindOps,
                    {"cuMemAlloc:a:" + mib(1), "cuMemAddressReserve:r:" + mib(4),
                     "cuMemCreate:h:" + mib(2) + ":1", "cuMemMap:r:0:" + mib(2) + ":h"},
                    {{"FAKECUDA_DEVICE_COUNT", "2"}});
  ASSERT_EQ(rep["devices"].size(), 2u) << rep.dump();
  const json& d0 = device(rep, 0);
  expect_totals(d0, {.peak_bytes = 1 * kMiB,
                     .live_at_exit_bytes = 1 * kMiB,
                     .live_at_exit_count = 1,
                     .alloc_count = 1});
  expect_kinds(d0, {{"device", 1 * kMiB, 1 * kMiB}});
  const json& d1 = device(rep, 1);
  expect_totals(d1, {.peak_bytes = 2 * kMiB,
                     .live_at_exit_bytes = 2 * kMiB,
                     .live_at_exit_count = 1,
                     .alloc_count = 1});
  expect_kinds(d1, {{"vmm_physical", 2 * kMiB, 2 * kMiB}, {"vmm_mapping", 2 * kMiB, 2 * kMiB}});
}

}  // namespace
}  // namespace gmt::test
