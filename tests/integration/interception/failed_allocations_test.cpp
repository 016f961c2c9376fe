// SPDX-License-Identifier: Apache-2.0
// A failed allocation must fail exactly as it would untraced (same return code, nothing else
// changed) and be counted as a failure of the current device. Each workload prints one line per
// call with its return code; the traced run's lines must equal the untraced run's, and both must
// be the codes the simulated driver is known to return.
#include <gtest/gtest.h>

#include "tests/integration/interception/kind_expectations.h"
#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

// 1 GiB of device memory with no context overhead: 512 MiB fit, another 1 GiB never does.
const std::map<std::string, std::string> kSmallDevice = {
    {"FAKECUDA_DEVICE_MEMORY", mib(1024)},
    {"FAKECUDA_CONTEXT_OVERHEAD", "0"},
};

std::string lines(const std::vector<std::string>& expected) {
  std::string text;
  for (const auto& line : expected) text += line + "\n";
  return text;
}

class FailedAllocations : public TracedRun {
 protected:
  // Runs `ops` untraced and traced; the outputs must be equal and equal to `expected`.
  json compare_and_report(const std::string& name, const std::vector<std::string>& ops,
                          const std::vector<std::string>& expected) {
    const ProcessResult untraced = run_untraced(name, ops, kSmallDevice);
    EXPECT_EQ(untraced.exit_code, 0) << untraced.err;
    EXPECT_EQ(untraced.out, lines(expected));
    const json rep = traced_report(name, ops, kSmallDevice);
    EXPECT_EQ(last_output_, untraced.out);
    return rep;
  }
};

TEST_F(FailedAllocations, OutOfMemoryOfEveryKindReturnsTheSameCodeAndIsCounted) {
  const std::string gib = mib(1024);
  const json rep = compare_and_report(
      "kind_ops_procaddress_12000",
      {"cuMemAlloc:a:" + mib(512), "try:cuMemAlloc:b:" + gib, "try:cuMemAllocPitch:c:65536:16384",
       "try:cuMemAllocManaged:m:" + gib, "try:cuMemAllocAsync:s:" + gib, "cuMemPoolCreate:p",
       "try:cuMemAllocFromPoolAsync:x:p:" + gib, "try:cuMemCreate:v:" + gib,
       "try:cuArrayCreate:arr:16384:16384:f32:1",
       "try:cuMipmappedArrayCreate:mip:16384:16384:0:f32:1:2", "try:cuMemAlloc:z:0",
       "try:cuMemHostAlloc:h:" + mib(1) + ":255", "cuMemFree:a"},
      {
          "cuMemAlloc:a:536870912 -> 0",
          "try:cuMemAlloc:b:1073741824 -> 2",  // CUDA_ERROR_OUT_OF_MEMORY
          "try:cuMemAllocPitch:c:65536:16384 -> 2 pitch=0",
          "try:cuMemAllocManaged:m:1073741824 -> 2",
          "try:cuMemAllocAsync:s:1073741824 -> 2",
          "cuMemPoolCreate:p -> 0",
          "try:cuMemAllocFromPoolAsync:x:p:1073741824 -> 2",
          "try:cuMemCreate:v:1073741824 -> 2",
          "try:cuArrayCreate:arr:16384:16384:f32:1 -> 2",
          "try:cuMipmappedArrayCreate:mip:16384:16384:0:f32:1:2 -> 2",
          "try:cuMemAlloc:z:0 -> 1",                // CUDA_ERROR_INVALID_VALUE
          "try:cuMemHostAlloc:h:1048576:255 -> 1",  // unknown flags
          "cuMemFree:a -> 0",
      });
  const json& d = device(rep, 0);
  // Nine device-side failures; the pinned host one is not a device's.
  expect_totals(
      d, {.peak_bytes = 512 * kMiB, .alloc_count = 1, .free_count = 1, .failed_alloc_count = 9});
  EXPECT_EQ(number(rep, "traces.0.unmatched_frees"), 0);
}

TEST_F(FailedAllocations, NullOutputPointersAreRefusedTheSameWay) {
  // A wrapper that wrote the result through the caller's pointer, or read it, would crash here.
  const json rep = compare_and_report(
      "kind_ops_procaddress_12000",
      {"try:cuMemAlloc:NULL:" + mib(1), "try:cuMemAllocPitch:NULL:1024:4",
       "try:cuMemAllocManaged:NULL:" + mib(1), "try:cuMemAllocAsync:NULL:" + mib(1),
       "try:cuMemCreate:NULL:" + mib(2), "try:cuArrayCreate:NULL:16:16:u8:1",
       "try:cuMemAllocHost:NULL:" + mib(1), "cuMemAlloc:a:" + mib(1)},
      {
          "try:cuMemAlloc:NULL:1048576 -> 1",
          "try:cuMemAllocPitch:NULL:1024:4 -> 1 pitch=0",
          "try:cuMemAllocManaged:NULL:1048576 -> 1",
          "try:cuMemAllocAsync:NULL:1048576 -> 1",
          "try:cuMemCreate:NULL:2097152 -> 1",
          "try:cuArrayCreate:NULL:16:16:u8:1 -> 1",
          "try:cuMemAllocHost:NULL:1048576 -> 1",
          "cuMemAlloc:a:1048576 -> 0",
      });
  const json& d = device(rep, 0);
  expect_totals(d, {.peak_bytes = 1 * kMiB,
                    .live_at_exit_bytes = 1 * kMiB,
                    .live_at_exit_count = 1,
                    .alloc_count = 1,
                    .failed_alloc_count = 6});
}

TEST_F(FailedAllocations, RuntimeOutOfMemoryReturnsTheSameCodeAndIsCounted) {
  const std::string gib = mib(1024);
  const json rep = compare_and_report(
      "runtime_kind_ops_shared",
      {"cudaMalloc:a:" + mib(512), "try:cudaMalloc:b:" + gib, "try:cudaMallocPitch:c:65536:16384",
       "try:cudaMallocManaged:m:" + gib, "try:cudaMallocAsync:s:" + gib, "cudaFree:a"},
      {
          "cudaMalloc:a:536870912 -> 0",
          "try:cudaMalloc:b:1073741824 -> 2",  // cudaErrorMemoryAllocation
          "try:cudaMallocPitch:c:65536:16384 -> 2 pitch=0",
          "try:cudaMallocManaged:m:1073741824 -> 2",
          "try:cudaMallocAsync:s:1073741824 -> 2",
          "cudaFree:a -> 0",
      });
  const json& d = device(rep, 0);
  expect_totals(
      d, {.peak_bytes = 512 * kMiB, .alloc_count = 1, .free_count = 1, .failed_alloc_count = 4});
}

}  // namespace
}  // namespace gmt::test
