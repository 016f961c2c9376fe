// SPDX-License-Identifier: Apache-2.0
// One test per driver allocation entry point: kind_ops calls it with known sizes under the
// preload, and `gpumemtrace report --json` must give that kind's exact bytes and counts, on the
// right device, and count it toward the device's peak only if its bytes occupy the device.
// kind_ops reaches the driver here as cudart, NCCL and cuBLAS do (cuGetProcAddress_v2 asked for
// itself at 12000); driver_paths_test.cpp runs one sequence through every other path.
#include <gtest/gtest.h>

#include "tests/integration/interception/kind_expectations.h"
#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

constexpr const char* kKindOps = "kind_ops_procaddress_12000";

class AllocationKinds : public TracedRun {};

TEST_F(AllocationKinds, CuMemAllocIsDeviceMemory) {
  // a 1, b 4 (peak 5), free b, c 2: a and c live.
  const json rep = traced_report(kKindOps, {"cuMemAlloc:a:" + mib(1), "cuMemAlloc:b:" + mib(4),
                                            "cuMemFree:b", "cuMemAlloc:c:" + mib(2)});
  EXPECT_EQ(number(rep, "traces.0.unmatched_frees"), 0);
  ASSERT_EQ(rep["devices"].size(), 1u);
  const json& d = device(rep, 0);
  expect_totals(d, {.peak_bytes = 5 * kMiB,
                    .live_at_exit_bytes = 3 * kMiB,
                    .live_at_exit_count = 2,
                    .alloc_count = 3,
                    .free_count = 1});
  expect_kinds(d, {{"device", 5 * kMiB, 3 * kMiB}});
}

TEST_F(AllocationKinds, CuMemAllocPitchCountsPitchTimesHeight) {
  // 1000 bytes wide rows are padded to a 1024-byte pitch: 100 rows take 102400 bytes, not
  // 100000. 512-byte rows need no padding: 8 rows are 4096 bytes.
  const json rep = traced_report(
      kKindOps, {"cuMemAllocPitch:p:1000:100", "cuMemAllocPitch:q:512:8", "cuMemFree:q"});
  EXPECT_EQ(printed(last_output_, "pitch"), 1024);
  const json& d = device(rep, 0);
  expect_totals(d, {.peak_bytes = 102400 + 4096,
                    .live_at_exit_bytes = 102400,
                    .live_at_exit_count = 1,
                    .alloc_count = 2,
                    .free_count = 1});
  expect_kinds(d, {{"pitched", 102400 + 4096, 102400}});
}

TEST_F(AllocationKinds, CuMemAllocManagedIsItsOwnKindOutsideTheDevicePeak) {
  // Managed memory migrates: it has its own numbers and stays out of peak and live bytes, but
  // its allocations are allocations of the device like any other.
  const json rep =
      traced_report(kKindOps, {"cuMemAlloc:a:" + mib(1), "cuMemAllocManaged:m:" + mib(8),
                               "cuMemAllocManaged:n:" + mib(2), "cuMemFree:m"});
  const json& d = device(rep, 0);
  expect_totals(d, {.peak_bytes = 1 * kMiB,
                    .live_at_exit_bytes = 1 * kMiB,
                    .live_at_exit_count = 2,
                    .alloc_count = 3,
                    .free_count = 1});
  expect_kinds(d, {{"device", 1 * kMiB, 1 * kMiB}, {"managed", 10 * kMiB, 2 * kMiB}});
}

TEST_F(AllocationKinds, PinnedHostMemoryIsCountedPerProcessNotPerDevice) {
  // cuMemAllocHost h1 4, cuMemHostAlloc h2 1 (5), free h1, cuMemHostAlloc h3 2 with flags
  // PORTABLE|DEVICEMAP: 5 MiB at most, 3 MiB left. None of it belongs to device 0.
  const json rep = traced_report(kKindOps, {"cuMemAlloc:a:" + mib(1), "cuMemAllocHost:h1:" + mib(4),
                                            "cuMemHostAlloc:h2:" + mib(1), "cuMemFreeHost:h1",
                                            "cuMemHostAlloc:h3:" + mib(2) + ":3"});
  expect_process_kind(rep, "host_pinned", 5 * kMiB, 3 * kMiB);
  EXPECT_EQ(number(rep, "traces.0.unmatched_frees"), 0);
  const json& d = device(rep, 0);
  expect_totals(d, {.peak_bytes = 1 * kMiB,
                    .live_at_exit_bytes = 1 * kMiB,
                    .live_at_exit_count = 1,
                    .alloc_count = 1});
  expect_kinds(d, {{"device", 1 * kMiB, 1 * kMiB}});
}

TEST_F(AllocationKinds, RegisteredHostMemoryIsCountedPerProcessNotPerDevice) {
  const json rep =
      traced_report(kKindOps, {"cuMemAlloc:a:" + mib(1), "cuMemHostRegister:r1:" + mib(2),
                               "cuMemHostRegister:r2:" + mib(1), "cuMemHostUnregister:r1"});
  expect_process_kind(rep, "host_registered", 3 * kMiB, 1 * kMiB);
  EXPECT_EQ(number(rep, "traces.0.unmatched_frees"), 0);
  const json& d = device(rep, 0);
  expect_totals(d, {.peak_bytes = 1 * kMiB,
                    .live_at_exit_bytes = 1 * kMiB,
                    .live_at_exit_count = 1,
                    .alloc_count = 1});
  expect_kinds(d, {{"device", 1 * kMiB, 1 * kMiB}});
}

TEST_F(AllocationKinds, CuMemAllocAsyncInBothStreamFlavours) {
  // s1 4 (legacy stream), s2 2 (per-thread stream): 6; free s1; s3 1; free s2 (per-thread).
  const json rep = traced_report(
      kKindOps, {"cuMemAllocAsync:s1:" + mib(4), "cuMemAllocAsync_ptsz:s2:" + mib(2),
                 "cuMemFreeAsync:s1", "cuMemAllocAsync:s3:" + mib(1), "cuMemFreeAsync_ptsz:s2"});
  EXPECT_EQ(number(rep, "traces.0.unmatched_frees"), 0);
  const json& d = device(rep, 0);
  expect_totals(d, {.peak_bytes = 6 * kMiB,
                    .live_at_exit_bytes = 1 * kMiB,
                    .live_at_exit_count = 1,
                    .alloc_count = 3,
                    .free_count = 2});
  expect_kinds(d, {{"stream_ordered", 6 * kMiB, 1 * kMiB}});
}

TEST_F(AllocationKinds, CuMemAllocFromPoolAsyncInBothStreamFlavours) {
  const json rep =
      traced_report(kKindOps, {"cuMemPoolCreate:p", "cuMemAllocFromPoolAsync:x:p:" + mib(3),
                               "cuMemAllocFromPoolAsync_ptsz:y:p:" + mib(5), "cuMemFreeAsync:x"});
  const json& d = device(rep, 0);
  expect_totals(d, {.peak_bytes = 8 * kMiB,
                    .live_at_exit_bytes = 5 * kMiB,
                    .live_at_exit_count = 1,
                    .alloc_count = 2,
                    .free_count = 1});
  expect_kinds(d, {{"stream_ordered", 8 * kMiB, 5 * kMiB}});
  EXPECT_EQ(rep["traces"][0]["pools"], (json{{"created", 1}, {"destroyed", 0}, {"trimmed", 0}}));
}

TEST_F(AllocationKinds, PoolCreationTrimsAndDestructionAreRecorded) {
  const json rep =
      traced_report(kKindOps, {"cuMemPoolCreate:p", "cuMemAllocFromPoolAsync:x:p:" + mib(3),
                               "cuMemFreeAsync:x", "cuMemPoolTrimTo:p:0", "cuMemPoolCreate:q",
                               "cuMemPoolDestroy:q", "cuMemPoolDestroy:p"});
  EXPECT_EQ(rep["traces"][0]["pools"], (json{{"created", 2}, {"destroyed", 2}, {"trimmed", 1}}));
  const json& d = device(rep, 0);
  expect_totals(d, {.peak_bytes = 3 * kMiB,
                    .live_at_exit_bytes = 0,
                    .live_at_exit_count = 0,
                    .alloc_count = 1,
                    .free_count = 1});
}

TEST_F(AllocationKinds, CuMemFreeEndsStreamOrderedAllocationsToo) {
  // The driver lets cuMemFree free what cuMemAllocAsync and pools allocated: frees are matched
  // by address, whatever API made the allocation.
  const json rep = traced_report(kKindOps, {"cuMemAllocAsync:s:" + mib(2), "cuMemPoolCreate:p",
                                            "cuMemAllocFromPoolAsync:x:p:" + mib(1), "cuMemFree:s",
                                            "cuMemFree:x", "cuMemAlloc:a:" + mib(4)});
  EXPECT_EQ(number(rep, "traces.0.unmatched_frees"), 0);
  const json& d = device(rep, 0);
  expect_totals(d, {.peak_bytes = 4 * kMiB,
                    .live_at_exit_bytes = 4 * kMiB,
                    .live_at_exit_count = 1,
                    .alloc_count = 3,
                    .free_count = 2});
  expect_kinds(d, {{"device", 4 * kMiB, 4 * kMiB}, {"stream_ordered", 3 * kMiB, 0}});
}

TEST_F(AllocationKinds, ArraysCountEveryDimensionChannelAndElementByte) {
  // a: 1000 x 100 floats = 400000; b: 1D (height 0 is 1) 256 x 4 channels of bytes = 1024;
  // c: 64 x 32 x 8 x 2 channels of 16 bits = 65536. b is destroyed.
  const json rep =
      traced_report(kKindOps, {"cuArrayCreate:a:1000:100:f32:1", "cuArrayCreate:b:256:0:u8:4",
                               "cuArray3DCreate:c:64:32:8:u16:2", "cuArrayDestroy:b"});
  const json& d = device(rep, 0);
  expect_totals(d, {.peak_bytes = 400000 + 1024 + 65536,
                    .live_at_exit_bytes = 400000 + 65536,
                    .live_at_exit_count = 2,
                    .alloc_count = 3,
                    .free_count = 1});
  expect_kinds(d, {{"array", 400000 + 1024 + 65536, 400000 + 65536}});
}

TEST_F(AllocationKinds, MipmappedArraysSumTheirLevels) {
  // m: 256x128, 128x64, 64x32, 32x16 floats = 131072 + 32768 + 8192 + 2048 = 174080.
  // n: 8x2x1, 4x1x1, 2x1x1, 1x1x1 bytes (halving stops at 1) = 16 + 4 + 2 + 1 = 23.
  const json rep = traced_report(
      kKindOps, {"cuMipmappedArrayCreate:m:256:128:0:f32:1:4",
                 "cuMipmappedArrayCreate:n:8:2:1:u8:1:4", "cuMipmappedArrayDestroy:n"});
  const json& d = device(rep, 0);
  expect_totals(d, {.peak_bytes = 174080 + 23,
                    .live_at_exit_bytes = 174080,
                    .live_at_exit_count = 1,
                    .alloc_count = 2,
                    .free_count = 1});
  expect_kinds(d, {{"array", 174080 + 23, 174080}});
}

TEST_F(AllocationKinds, GraphMemoryNodesCountOnTheirPoolsDevice) {
  // Device 0 is current; y's pool is on device 1, so y counts there. x has a free node.
  const json rep =
      traced_report(kKindOps,
                    {"cuGraphCreate:g", "cuGraphAddMemAllocNode:x:g:" + mib(3),
                     "cuGraphAddMemAllocNode:y:g:" + mib(5) + ":1", "cuGraphAddMemFreeNode:g:x"},
                    {{"FAKECUDA_DEVICE_COUNT", "2"}});
  EXPECT_EQ(number(rep, "traces.0.unmatched_frees"), 0);
  ASSERT_EQ(rep["devices"].size(), 2u) << rep.dump();
  const json& d0 = device(rep, 0);
  expect_totals(d0, {.peak_bytes = 3 * kMiB, .alloc_count = 1, .free_count = 1});
  expect_kinds(d0, {{"graph_memory", 3 * kMiB, 0}});
  const json& d1 = device(rep, 1);
  expect_totals(d1, {.peak_bytes = 5 * kMiB,
                     .live_at_exit_bytes = 5 * kMiB,
                     .live_at_exit_count = 1,
                     .alloc_count = 1});
  expect_kinds(d1, {{"graph_memory", 5 * kMiB, 5 * kMiB}});
}

TEST_F(AllocationKinds, IpcImportsAreTheirOwnKindAndNeverInThePeak) {
  // The import maps a's 4 MiB a second time: no new device memory. i is closed; j, opened
  // afterwards, is still open at exit.
  const json rep = traced_report(
      kKindOps, {"cuMemAlloc:a:" + mib(4), "cuIpcGetMemHandle:a", "cuIpcOpenMemHandle:i:a",
                 "cuIpcCloseMemHandle:i", "cuIpcOpenMemHandle:j:a"});
  EXPECT_EQ(number(rep, "traces.0.unmatched_frees"), 0);
  const json& d = device(rep, 0);
  expect_totals(d, {.peak_bytes = 4 * kMiB,
                    .live_at_exit_bytes = 4 * kMiB,
                    .live_at_exit_count = 2,
                    .alloc_count = 3,
                    .free_count = 1});
  expect_kinds(d, {{"device", 4 * kMiB, 4 * kMiB}, {"ipc_import", 4 * kMiB, 4 * kMiB}});
}

}  // namespace
}  // namespace gmt::test
