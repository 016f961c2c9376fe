// SPDX-License-Identifier: Apache-2.0
// A context's end frees everything still allocated in it without a single free call:
// cuCtxDestroy, a primary context reset (cuDevicePrimaryCtxReset, cudaDeviceReset) and the last
// cuDevicePrimaryCtxRelease. What a context owns goes with it (device, pitched, managed, pinned
// and registered host memory, arrays, IPC imports); VMM handles and graph memory belong to the
// device and stay. Programs that reset instead of freeing would otherwise look like they leak.
#include <gtest/gtest.h>

#include "tests/integration/interception/kind_expectations.h"
#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

constexpr const char* kKindOps = "kind_ops_procaddress_12000";

class ContextTeardown : public TracedRun {};

TEST_F(ContextTeardown, CuCtxDestroyFreesWhatTheContextOwned) {
  // p in the primary context; a, q (64 rows of 1024 bytes), m, h, r, arr (1024 bytes) and the
  // import i of p in context c; v is device memory of no context. Destroying c leaves p and v;
  // b is allocated in the primary context afterwards.
  const json rep = traced_report(
      kKindOps, {"cuMemAlloc:p:" + mib(1), "cuCtxCreate:c:0", "cuMemAlloc:a:" + mib(2),
                 "cuMemAllocPitch:q:1024:64", "cuMemAllocManaged:m:" + mib(4),
                 "cuMemAllocHost:h:" + mib(1), "cuMemHostRegister:r:" + mib(1),
                 "cuArrayCreate:arr:1024:1:u8:1", "cuIpcGetMemHandle:p", "cuIpcOpenMemHandle:i:p",
                 "cuMemCreate:v:" + mib(2), "cuCtxDestroy:c", "cuMemAlloc:b:" + mib(1)});
  EXPECT_EQ(number(rep, "traces.0.unmatched_frees"), 0);
  const json& d = device(rep, 0);
  // Before the destroy: p 1 + a 2 + q 65536 + arr 1024 + v 2 MiB. At the end: p, v, b.
  EXPECT_EQ(number(d, "peak_bytes"), 5 * kMiB + 65536 + 1024);
  EXPECT_EQ(number(d, "live_at_exit_bytes"), 4 * kMiB);
  EXPECT_EQ(number(d, "live_at_exit_count"), 3);
  EXPECT_EQ(number(d, "alloc_count"), 8);  // p a q m arr i v b
  expect_kinds(d, {{"device", 3 * kMiB, 2 * kMiB},
                   {"pitched", 65536, 0},
                   {"managed", 4 * kMiB, 0},
                   {"array", 1024, 0},
                   {"ipc_import", 1 * kMiB, 0},
                   {"vmm_physical", 2 * kMiB, 2 * kMiB}});
  expect_process_kind(rep, "host_pinned", 1 * kMiB, 0);
  expect_process_kind(rep, "host_registered", 1 * kMiB, 0);
}

TEST_F(ContextTeardown, DestroyingAContextOnAnotherDeviceEndsOnlyItsOwnAllocations) {
  const json rep =
      traced_report(kKindOps,
                    {"cuMemAlloc:p:" + mib(1), "cuCtxCreate:c:1", "cuMemAlloc:a:" + mib(2),
                     "cuMemAllocManaged:m:" + mib(1), "cuCtxDestroy:c", "cuMemAlloc:b:" + mib(1)},
                    {{"FAKECUDA_DEVICE_COUNT", "2"}});
  ASSERT_EQ(rep["devices"].size(), 2u) << rep.dump();
  const json& d0 = device(rep, 0);
  EXPECT_EQ(number(d0, "peak_bytes"), 2 * kMiB);
  EXPECT_EQ(number(d0, "live_at_exit_bytes"), 2 * kMiB);
  EXPECT_EQ(number(d0, "live_at_exit_count"), 2);
  EXPECT_EQ(number(d0, "alloc_count"), 2);
  expect_kinds(d0, {{"device", 2 * kMiB, 2 * kMiB}});
  const json& d1 = device(rep, 1);
  EXPECT_EQ(number(d1, "peak_bytes"), 2 * kMiB);
  EXPECT_EQ(number(d1, "live_at_exit_bytes"), 0);
  EXPECT_EQ(number(d1, "live_at_exit_count"), 0);
  EXPECT_EQ(number(d1, "alloc_count"), 2);
  expect_kinds(d1, {{"device", 2 * kMiB, 0}, {"managed", 1 * kMiB, 0}});
}

TEST_F(ContextTeardown, PrimaryContextResetFreesWhatThePrimaryContextOwned) {
  // Everything in the primary context goes with the reset; v (VMM) and x (graph memory) stay.
  // Before the reset: a 2 + arr 1 + v 2 + x 1 = 6 MiB. After it, b 1 MiB joins v and x.
  const json rep =
      traced_report(kKindOps, {"cuMemAlloc:a:" + mib(2), "cuMemAllocManaged:m:" + mib(1),
                               "cuMemAllocHost:h:" + mib(1), "cuMemHostRegister:r:" + mib(1),
                               "cuArrayCreate:arr:512:512:u8:4", "cuIpcGetMemHandle:a",
                               "cuIpcOpenMemHandle:i:a", "cuMemCreate:v:" + mib(2),
                               "cuGraphCreate:g", "cuGraphAddMemAllocNode:x:g:" + mib(1),
                               "cuDevicePrimaryCtxReset:0", "device:0", "cuMemAlloc:b:" + mib(1)});
  const json& d = device(rep, 0);
  EXPECT_EQ(number(d, "peak_bytes"), 6 * kMiB);
  EXPECT_EQ(number(d, "live_at_exit_bytes"), 4 * kMiB);
  EXPECT_EQ(number(d, "live_at_exit_count"), 3);
  EXPECT_EQ(number(d, "alloc_count"), 7);  // a m arr i v x b
  expect_kinds(d, {{"device", 2 * kMiB, 1 * kMiB},
                   {"managed", 1 * kMiB, 0},
                   {"array", 1 * kMiB, 0},
                   {"ipc_import", 2 * kMiB, 0},
                   {"vmm_physical", 2 * kMiB, 2 * kMiB},
                   {"graph_memory", 1 * kMiB, 1 * kMiB}});
  expect_process_kind(rep, "host_pinned", 1 * kMiB, 0);
  expect_process_kind(rep, "host_registered", 1 * kMiB, 0);
}

TEST_F(ContextTeardown, OnlyTheLastPrimaryContextReleaseFrees) {
  // Two references: the first release frees nothing (b joins a: 3 MiB), the second ends the
  // context and everything in it. Freeing at the first release would make the peak 2 MiB.
  const json rep =
      traced_report(kKindOps, {"cuMemAlloc:a:" + mib(1), "cuMemAllocHost:h:" + mib(1),
                               "cuDevicePrimaryCtxRetain:0", "cuDevicePrimaryCtxRelease:0",
                               "cuMemAlloc:b:" + mib(2), "cuDevicePrimaryCtxRelease:0"});
  const json& d = device(rep, 0);
  EXPECT_EQ(number(d, "peak_bytes"), 3 * kMiB);
  EXPECT_EQ(number(d, "live_at_exit_bytes"), 0);
  EXPECT_EQ(number(d, "live_at_exit_count"), 0);
  EXPECT_EQ(number(d, "alloc_count"), 2);
  expect_kinds(d, {{"device", 3 * kMiB, 0}});
  expect_process_kind(rep, "host_pinned", 1 * kMiB, 0);
}

class RuntimeDeviceReset : public TracedRun, public ::testing::WithParamInterface<const char*> {};

TEST_P(RuntimeDeviceReset, CudaDeviceResetFreesWhatTheRuntimeAllocated) {
  // cudaDeviceReset is cuDevicePrimaryCtxReset underneath. Before it: a 2 MiB + arr 256 x 256
  // floats (262144); after it, b is the only allocation left.
  const json rep = traced_report(
      GetParam(), {"cudaMalloc:a:" + mib(2), "cudaMallocManaged:m:" + mib(1),
                   "cudaMallocHost:h:" + mib(1), "cudaHostRegister:r:" + mib(1),
                   "cudaMallocArray:arr:256:256:1", "cudaDeviceReset", "cudaMalloc:b:" + mib(1)});
  const json& d = device(rep, 0);
  EXPECT_EQ(number(d, "peak_bytes"), 2 * kMiB + 262144);
  EXPECT_EQ(number(d, "live_at_exit_bytes"), 1 * kMiB);
  EXPECT_EQ(number(d, "live_at_exit_count"), 1);
  EXPECT_EQ(number(d, "alloc_count"), 4);  // a m arr b
  expect_kinds(d, {{"device", 2 * kMiB, 1 * kMiB}, {"managed", 1 * kMiB, 0}, {"array", 262144, 0}});
  expect_process_kind(rep, "host_pinned", 1 * kMiB, 0);
  expect_process_kind(rep, "host_registered", 1 * kMiB, 0);
}

INSTANTIATE_TEST_SUITE_P(Runtimes, RuntimeDeviceReset,
                         ::testing::Values("runtime_kind_ops_shared", "runtime_kind_ops_static"));

}  // namespace
}  // namespace gmt::test
