// SPDX-License-Identifier: Apache-2.0
#include "tests/integration/interception/kind_expectations.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {

void expect_totals(const json& device, const DeviceTotals& expected) {
  const std::string where =
      " of device " + (device.is_object() && device.contains("device") ? device["device"].dump()
                                                                       : std::string("?"));
  EXPECT_EQ(number(device, "peak_bytes"), expected.peak_bytes) << "peak_bytes" << where;
  EXPECT_EQ(number(device, "live_at_exit_bytes"), expected.live_at_exit_bytes)
      << "live_at_exit_bytes" << where;
  EXPECT_EQ(number(device, "live_at_exit_count"), expected.live_at_exit_count)
      << "live_at_exit_count" << where;
  EXPECT_EQ(number(device, "alloc_count"), expected.alloc_count) << "alloc_count" << where;
  EXPECT_EQ(number(device, "free_count"), expected.free_count) << "free_count" << where;
  EXPECT_EQ(number(device, "failed_alloc_count"), expected.failed_alloc_count)
      << "failed_alloc_count" << where;
}

void expect_kinds(const json& device, const std::vector<KindBytes>& expected) {
  std::vector<std::string> names;
  for (const KindBytes& k : expected) names.push_back(k.kind);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(kinds(device), names) << device.dump();
  for (const KindBytes& k : expected) {
    EXPECT_EQ(number(device, "by_kind." + k.kind + ".peak_bytes"), k.peak_bytes)
        << k.kind << " in " << device.dump();
    EXPECT_EQ(number(device, "by_kind." + k.kind + ".live_at_exit_bytes"), k.live_at_exit_bytes)
        << k.kind << " in " << device.dump();
  }
}

void expect_process_kind(const json& report, const std::string& key, int64_t peak_bytes,
                         int64_t live_at_exit_bytes) {
  EXPECT_EQ(number(report, key + ".peak_bytes"), peak_bytes) << key;
  EXPECT_EQ(number(report, key + ".live_at_exit_bytes"), live_at_exit_bytes) << key;
}

}  // namespace gmt::test
