// SPDX-License-Identifier: Apache-2.0
// Many threads allocating and freeing at once. The simulated driver hands a freed address to the
// very next allocation of that size, whichever thread asks: unless every free is recorded before
// the real free and every allocation after the real allocation, some record lands out of order
// and the report shows an unmatched free, a lost allocation or bytes still live at exit.
#include <gtest/gtest.h>

#include "tests/integration/interception/kind_expectations.h"
#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

constexpr const char* kKindOps = "kind_ops_procaddress_12000";

class ConcurrentAllocations : public TracedRun {};

TEST_F(ConcurrentAllocations, SixteenThreadsOfTenThousandPairsAreAllCounted) {
  const json rep = traced_report(kKindOps, {"threads:16:10000:" + mib(1)});
  EXPECT_EQ(number(rep, "traces.0.unmatched_frees"), 0);
  const json& d = device(rep, 0);
  EXPECT_EQ(number(d, "alloc_count"), 160000);
  EXPECT_EQ(number(d, "free_count"), 160000);
  EXPECT_EQ(number(d, "failed_alloc_count"), 0);
  EXPECT_EQ(number(d, "live_at_exit_bytes"), 0);
  EXPECT_EQ(number(d, "live_at_exit_count"), 0);
  // Each thread holds one allocation at a time; how many overlap depends on the scheduler.
  EXPECT_GE(number(d, "peak_bytes"), int64_t{1 * kMiB});
  EXPECT_LE(number(d, "peak_bytes"), int64_t{16 * kMiB});
  EXPECT_EQ(number(d, "by_kind.device.peak_bytes"), number(d, "peak_bytes"));
  EXPECT_EQ(number(d, "by_kind.device.live_at_exit_bytes"), 0);
}

TEST_F(ConcurrentAllocations, AddressesReusedAcrossThreadsAndApisStayInOrder) {
  // 8 threads each keep 4 allocations of the same size live and replace the oldest 5000 times;
  // even threads use cuMemAlloc/cuMemFree, odd ones cuMemAllocAsync/cuMemFreeAsync, which take
  // addresses from the same range. The workload reports how many addresses it saw and how many
  // of them more than one thread got: the second must not be 0, or the race did not happen.
  const json rep = traced_report(kKindOps, {"race:8:5000:" + mib(1)});
  EXPECT_GT(printed(last_output_, "shared"), 0) << last_output_;
  EXPECT_LE(printed(last_output_, "distinct"), 8 * 4) << last_output_;
  EXPECT_EQ(number(rep, "traces.0.unmatched_frees"), 0);
  const json& d = device(rep, 0);
  EXPECT_EQ(number(d, "alloc_count"), 40000);
  EXPECT_EQ(number(d, "free_count"), 40000);
  EXPECT_EQ(number(d, "failed_alloc_count"), 0);
  EXPECT_EQ(number(d, "live_at_exit_bytes"), 0);
  EXPECT_EQ(number(d, "live_at_exit_count"), 0);
  EXPECT_GE(number(d, "peak_bytes"), int64_t{4 * kMiB});
  EXPECT_LE(number(d, "peak_bytes"), int64_t{32 * kMiB});
  EXPECT_EQ(kinds(d), (std::vector<std::string>{"device", "stream_ordered"}));
  EXPECT_EQ(number(d, "by_kind.device.live_at_exit_bytes"), 0);
  EXPECT_EQ(number(d, "by_kind.stream_ordered.live_at_exit_bytes"), 0);
}

}  // namespace
}  // namespace gmt::test
