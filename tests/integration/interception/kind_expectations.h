// SPDX-License-Identifier: Apache-2.0
// Expectations on the per-device and per-kind numbers of `gpumemtrace report --json`, written
// as the whole set a test expects, so that a report with one number wrong, one kind missing or
// one kind too many fails with the device's JSON in the message.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gmt::test {

// The counts and device-resident bytes of one devices[] entry.
struct DeviceTotals {
  int64_t peak_bytes = 0;
  int64_t live_at_exit_bytes = 0;
  int64_t live_at_exit_count = 0;
  int64_t alloc_count = 0;
  int64_t free_count = 0;
  int64_t failed_alloc_count = 0;
};
void expect_totals(const nlohmann::json& device, const DeviceTotals& expected);

// One by_kind entry: that kind's own high-water mark and what of it was live at the end.
struct KindBytes {
  std::string kind;
  int64_t peak_bytes = 0;
  int64_t live_at_exit_bytes = 0;
};
// by_kind lists exactly these kinds, with these numbers.
void expect_kinds(const nlohmann::json& device, const std::vector<KindBytes>& expected);

// A per-process kind at the top level of the report: host_pinned, host_registered or
// vmm_reservation.
void expect_process_kind(const nlohmann::json& report, const std::string& key, int64_t peak_bytes,
                         int64_t live_at_exit_bytes);

}  // namespace gmt::test
