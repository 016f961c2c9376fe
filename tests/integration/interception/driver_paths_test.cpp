// SPDX-License-Identifier: Apache-2.0
// The same allocations must be seen the same, whichever way a program reached the driver:
// exported symbols, dlsym of the versioned names, cuGetProcAddress in its 11030 and 12000 ABIs,
// with the per-thread-stream flag, through the runtime's cudaGetDriverEntryPointByVersion, and
// the runtime's own APIs in the shared and the static cudart. One sequence that touches every
// kind runs through each driver path, another through each runtime; the numbers are exact.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/integration/interception/kind_expectations.h"
#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

// Device-resident bytes after each step are in the comments (managed, host, reservations,
// mappings and imports never count). p: 1000-byte rows padded to 1024, 100 rows = 102400.
// arr: 1024 x 64 floats = 262144; arr3: 16^3 x 4 bytes = 16384; mip: 174080 (four levels of
// 256 x 128 floats, halved each level).
const std::vector<std::string> kDriverSequence = {
    "cuMemAlloc:a:" + mib(1),                         // 1048576
    "cuMemAllocPitch:p:1000:100",                     // 1150976
    "cuMemAllocManaged:m:" + mib(2),                  //
    "cuMemAllocHost:h:" + mib(1),                     //
    "cuMemHostAlloc:h2:" + mib(2),                    //
    "cuMemFreeHost:h",                                //
    "cuMemHostRegister:r:" + mib(1),                  //
    "cuMemAllocAsync:s:" + mib(4),                    // 5345280
    "cuMemAllocAsync_ptsz:t:" + mib(2),               // 7442432
    "cuMemFreeAsync_ptsz:s",                          // 3248128
    "cuMemPoolCreate:pool",                           //
    "cuMemAllocFromPoolAsync:x:pool:" + mib(3),       // 6393856
    "cuMemAllocFromPoolAsync_ptsz:y:pool:" + mib(2),  // 8491008 (the peak)
    "cuMemFreeAsync:y",                               // 6393856
    "cuMemFree:x",                                    // 3248128
    "cuMemPoolTrimTo:pool:0",                         //
    "cuMemAddressReserve:va:" + mib(8),               //
    "cuMemCreate:v:" + mib(2),                        // 5345280
    "cuMemMap:va:0:" + mib(2) + ":v",                 //
    "cuMemMap:va:" + mib(4) + ":" + mib(2) + ":v",    //
    "cuMemRelease:v",                                 // still mapped: still there
    "cuMemUnmap:va:0:" + mib(2),                      // still mapped once
    "cuArrayCreate:arr:1024:64:f32:1",                // 5607424
    "cuArray3DCreate:arr3:16:16:16:u8:4",             // 5623808
    "cuMipmappedArrayCreate:mip:256:128:0:f32:1:4",   // 5797888
    "cuArrayDestroy:arr3",                            // 5781504
    "cuGraphCreate:g",                                //
    "cuGraphAddMemAllocNode:gx:g:" + mib(1),          // 6830080
    "cuGraphAddMemFreeNode:g:gx",                     // 5781504
    "cuIpcGetMemHandle:a",                            //
    "cuIpcOpenMemHandle:i:a",                         //
    "cuIpcCloseMemHandle:i",                          //
    "cuMemFree:a",                                    // 4732928
    "cuMemUnmap:va:" + mib(4) + ":" + mib(2),         // v goes: 2635776
    "cuMemAddressFree:va",                            //
    "cuMemHostUnregister:r",                          //
};

class DriverPath : public TracedRun, public ::testing::WithParamInterface<const char*> {};

TEST_P(DriverPath, EveryKindIsSeenWithExactBytesAndCounts) {
  const json rep = traced_report(GetParam(), kDriverSequence);
  ASSERT_EQ(number(rep, "traces.0.unmatched_frees"), 0) << rep.dump();
  ASSERT_EQ(rep["devices"].size(), 1u) << rep.dump();
  EXPECT_EQ(rep["traces"][0]["pools"], (json{{"created", 1}, {"destroyed", 0}, {"trimmed", 1}}));
  const json& d = device(rep, 0);
  // Allocations a p m s t x y v arr arr3 mip gx i; frees s y x arr3 gx i a v. Live: p m t arr
  // mip; live device-resident bytes: p + t + arr + mip.
  expect_totals(d, {.peak_bytes = 8491008,
                    .live_at_exit_bytes = 102400 + 2 * kMiB + 262144 + 174080,
                    .live_at_exit_count = 5,
                    .alloc_count = 13,
                    .free_count = 8});
  expect_kinds(d, {{"device", 1 * kMiB, 0},
                   {"pitched", 102400, 102400},
                   {"managed", 2 * kMiB, 2 * kMiB},
                   {"stream_ordered", 7 * kMiB, 2 * kMiB},  // t + x + y
                   {"vmm_physical", 2 * kMiB, 0},
                   {"vmm_mapping", 4 * kMiB, 0},
                   {"array", 262144 + 16384 + 174080, 262144 + 174080},
                   {"graph_memory", 1 * kMiB, 0},
                   {"ipc_import", 1 * kMiB, 0}});
  expect_process_kind(rep, "host_pinned", 3 * kMiB, 2 * kMiB);
  expect_process_kind(rep, "host_registered", 1 * kMiB, 0);
  expect_process_kind(rep, "vmm_reservation", 8 * kMiB, 0);
}

INSTANTIATE_TEST_SUITE_P(Paths, DriverPath,
                         ::testing::Values("kind_ops_linked", "kind_ops_dlsym",
                                           "kind_ops_procaddress_11030",
                                           "kind_ops_procaddress_12000", "kind_ops_per_thread",
                                           "kind_ops_runtime_entry_point"));

// The runtime's APIs, each of which becomes one driver call. q: cudaMalloc3D of 1000 x 10 x 10
// is 100 pitched rows of 1024 bytes. arr: 256 x 256 floats.
const std::vector<std::string> kRuntimeSequence = {
    "cudaMalloc:a:" + mib(1),                    // 1048576
    "cudaMallocPitch:p:1000:100",                // 1150976
    "cudaMalloc3D:q:1000:10:10",                 // 1253376
    "cudaMallocManaged:m:" + mib(2),             //
    "cudaMallocHost:h:" + mib(1),                //
    "cudaHostAlloc:h2:" + mib(2),                //
    "cudaFreeHost:h",                            //
    "cudaHostRegister:r:" + mib(1),              //
    "cudaMallocAsync:s:" + mib(4),               // 5447680
    "cudaMemPoolCreate:pool",                    //
    "cudaMallocFromPoolAsync:x:pool:" + mib(3),  // 8593408 (the peak)
    "cudaFreeAsync:s",                           // 4399104
    "cudaMallocAsync_ptsz:u:" + mib(1),          // 5447680
    "cudaMallocArray:arr:256:256:1",             // 5709824
    "cudaFreeAsync_ptsz:u",                      // 4661248
    "cudaFreeArray:arr",                         // 4399104
    "cudaFree:p",                                // 4296704
    "cudaFreeAsync:x",                           // 1150976
    "cudaHostUnregister:r",                      //
};

class RuntimePath : public TracedRun, public ::testing::WithParamInterface<const char*> {};

TEST_P(RuntimePath, EveryKindIsSeenWithExactBytesAndCounts) {
  const json rep = traced_report(GetParam(), kRuntimeSequence);
  EXPECT_EQ(printed(last_output_, "pitch"), 1024);
  ASSERT_EQ(number(rep, "traces.0.unmatched_frees"), 0) << rep.dump();
  ASSERT_EQ(rep["devices"].size(), 1u) << rep.dump();
  const json& d = device(rep, 0);
  // Allocations a p q m s x u arr; frees s u arr p x; live a q m.
  expect_totals(d, {.peak_bytes = 8593408,
                    .live_at_exit_bytes = 1 * kMiB + 102400,
                    .live_at_exit_count = 3,
                    .alloc_count = 8,
                    .free_count = 5});
  expect_kinds(d, {{"device", 1 * kMiB, 1 * kMiB},
                   {"pitched", 204800, 102400},
                   {"managed", 2 * kMiB, 2 * kMiB},
                   {"stream_ordered", 7 * kMiB, 0},  // s + x
                   {"array", 262144, 0}});
  expect_process_kind(rep, "host_pinned", 3 * kMiB, 2 * kMiB);
  expect_process_kind(rep, "host_registered", 1 * kMiB, 0);
}

// Allocations and frees by the API the program called (`info --json`).
std::map<std::string, int> api_counts(const json& counts) {
  std::map<std::string, int> out;
  for (const auto& [api, n] : counts.items()) out[api] = n.get<int>();
  return out;
}

// Through the shared runtime every call is recorded once, under the runtime API the program
// called (the driver entry point it became stays in `driver_api`/the dump). A static runtime
// is part of the program and cannot be interposed: its calls keep the driver's names.
TEST_P(RuntimePath, EachCallIsNamedByTheApiTheProgramCalled) {
  std::vector<std::string> ops = kRuntimeSequence;
  ops.push_back("cudaDeviceReset");
  traced_report(GetParam(), ops);
  const ProcessResult info = cli({"info", "--json", only_trace()});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const json i = json::parse(info.out);
  const ProcessResult dump = cli({"dump", only_trace()});
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  const bool shared = std::string(GetParam()) == "runtime_kind_ops_shared";
  if (shared) {
    EXPECT_EQ(api_counts(i["allocations_by_api"]),
              (std::map<std::string, int>{{"cudaMalloc", 1},
                                          {"cudaMallocPitch", 1},
                                          {"cudaMalloc3D", 1},
                                          {"cudaMallocManaged", 1},
                                          {"cudaMallocHost", 1},
                                          {"cudaHostAlloc", 1},
                                          {"cudaHostRegister", 1},
                                          {"cudaMallocAsync", 2},
                                          {"cudaMallocFromPoolAsync", 1},
                                          {"cudaMallocArray", 1}}));
    EXPECT_EQ(api_counts(i["frees_by_api"]), (std::map<std::string, int>{{"cudaFree", 1},
                                                                         {"cudaFreeHost", 1},
                                                                         {"cudaHostUnregister", 1},
                                                                         {"cudaFreeAsync", 3},
                                                                         {"cudaFreeArray", 1}}));
    EXPECT_NE(dump.out.find(R"("api":"cuMemPoolCreate","pool")"), std::string::npos);
    EXPECT_NE(dump.out.find(R"("public_api":"cudaMemPoolCreate")"), std::string::npos);
    EXPECT_NE(dump.out.find(R"("api":"cuDevicePrimaryCtxReset","public_api":"cudaDeviceReset")"),
              std::string::npos);
  } else {
    EXPECT_EQ(api_counts(i["allocations_by_api"]),
              (std::map<std::string, int>{{"cuMemAlloc", 1},
                                          {"cuMemAllocPitch", 2},
                                          {"cuMemAllocManaged", 1},
                                          {"cuMemHostAlloc", 2},
                                          {"cuMemHostRegister", 1},
                                          {"cuMemAllocAsync", 2},
                                          {"cuMemAllocFromPoolAsync", 1},
                                          {"cuArrayCreate", 1}}));
    EXPECT_EQ(api_counts(i["frees_by_api"]), (std::map<std::string, int>{{"cuMemFree", 1},
                                                                         {"cuMemFreeHost", 1},
                                                                         {"cuMemHostUnregister", 1},
                                                                         {"cuMemFreeAsync", 3},
                                                                         {"cuArrayDestroy", 1}}));
    EXPECT_EQ(dump.out.find("public_api"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(Runtimes, RuntimePath,
                         ::testing::Values("runtime_kind_ops_shared", "runtime_kind_ops_static"));

}  // namespace
}  // namespace gmt::test
