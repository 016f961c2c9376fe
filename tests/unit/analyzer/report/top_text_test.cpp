// SPDX-License-Identifier: Apache-2.0
// The text view of `gpumemtrace top`: on a terminal it fits (the header kept, lines cut to the
// width, "+N more"), the totals stand under their columns, and a watch that fell behind says so.
#include "analyzer/report/top/top_text.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace gmt::analyzer {
namespace {

using Json = nlohmann::ordered_json;

constexpr uint64_t kMiB = 1 << 20;

Json device(uint64_t live) {
  return {{"device", 0},
          {"live_bytes", live},
          {"live_count", 1},
          {"peak_bytes", 2 * live},
          {"peak_time_ns", 1'500'000'000},
          {"growth_1m_bytes", live},
          {"alloc_count", 2},
          {"free_count", 1},
          {"failed_alloc_count", 0},
          {"by_kind", {{"device", live}}},
          {"by_library", {{"app", live}}},
          {"framework_allocated_bytes", nullptr},
          {"framework_reserved_bytes", nullptr},
          {"nvml_process_bytes", nullptr},
          {"nvml_device_used_bytes", nullptr},
          {"nvml_device_total_bytes", nullptr},
          {"driver_used_bytes", nullptr},
          {"driver_total_bytes", nullptr},
          {"views_time_ns", nullptr},
          {"top_sites", Json::array()}};
}

Json process(uint64_t pid, uint64_t live, uint64_t failed) {
  // A long command line, as a training job's is.
  return {{"path", "/tmp/t" + std::to_string(pid) + ".gmt"},
          {"pid", pid},
          {"rank", nullptr},
          {"host", "h"},
          {"argv", {"python3", "train.py", "--config", "configs/a-very-long-name-indeed.yaml"}},
          {"state", "running"},
          {"records", 10},
          {"trace_time_ns", 2'000'000'000},
          {"failed_alloc_count", failed},
          {"devices", {device(live)}},
          {"open_phases", Json::array()}};
}

Json frame_of(std::size_t processes) {
  Json list = Json::array();
  uint64_t total = 0;
  for (std::size_t i = 0; i < processes; ++i) {
    list.push_back(process(1000 + i, (processes - i) * kMiB, 3));
    total += (processes - i) * kMiB;
  }
  return {{"time_unix_ns", 0},
          {"sort", "now"},
          {"device_filter", nullptr},
          {"processes", list},
          {"totals",
           {{"processes", processes},
            {"running", processes},
            {"live_bytes", total},
            {"failed_alloc_count", 3 * processes},
            {"devices", {{{"device", 0}, {"live_bytes", total}}}}}}};
}

std::vector<std::string> lines_of(const Json& frame, const TopScreen& screen) {
  std::ostringstream out;
  write_top_text(frame, screen, out);
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// 60 processes in a 120x30 terminal: the header stayed on screen, every line within the width.
TEST(TopText, SixtyProcessesFitATerminalOfThirtyRows) {
  const std::vector<std::string> lines = lines_of(frame_of(60), {true, 120, 30});
  // The last row is left empty: a line ended there would scroll the header away.
  ASSERT_EQ(lines.size(), 29u);
  EXPECT_EQ(lines[0],
            "gpumemtrace top: 60 processes (60 running), sort: now, device: all   [s] sort  [d] "
            "device  [q] quit");
  EXPECT_EQ(lines[2].rfind("PID     RANK STATE     DEV       NOW", 0), 0u) << lines[2];
  for (const std::string& line : lines) EXPECT_LE(line.size(), 120u) << line;
  // Head (3), 23 processes, the line for the rest, the totals (2).
  for (std::size_t i = 0; i < 23; ++i)
    EXPECT_EQ(lines[3 + i].rfind(std::to_string(1000 + i) + " ", 0), 0u) << lines[3 + i];
  EXPECT_EQ(lines[26], "+37 more processes (s sorts, d picks a device)");
  EXPECT_EQ(lines[27].rfind("TOTAL", 0), 0u) << lines[27];
  // Each command line cut at the width, not wrapped.
  EXPECT_EQ(lines[3].size(), 120u);
  EXPECT_EQ(lines[3].substr(112), "3  pytho");
}

TEST(TopText, PipedNothingIsCut) {
  const std::vector<std::string> lines = lines_of(frame_of(60), {false, 120, 30});
  // Head (3), 60 processes, totals (2), a blank line and the first's details (3).
  ASSERT_EQ(lines.size(), 3u + 60u + 2u + 1u + 3u);
  EXPECT_EQ(lines[3],
            "1000    -    running     0  60.0 MiB   120 MiB     1.5 s +60.0 MiB"
            "         -         -         -         -      3  python3 train.py "
            "--config configs/a-v...");
}

// The totals stand under the columns they add up: NOW under NOW, FAILED under FAILED.
TEST(TopText, TheTotalsAreInTheirColumns) {
  const std::vector<std::string> lines = lines_of(frame_of(1), {});
  ASSERT_GE(lines.size(), 6u);
  const std::string& header = lines[2];
  const std::string& row = lines[3];
  const std::string& total = lines[4];
  const std::string& per_device = lines[5];
  const std::size_t now_end = header.find("NOW") + 3;
  EXPECT_EQ(row.substr(now_end - 8, 8), "1.00 MiB") << row;
  EXPECT_EQ(total, "TOTAL" + std::string(now_end - 8 - 5, ' ') + "1.00 MiB" +
                       std::string(header.find("FAILED") + 6 - now_end - 1, ' ') + "3");
  const std::size_t dev_end = header.find("DEV") + 3;
  EXPECT_EQ(per_device, std::string(dev_end - 1, ' ') + "0" +
                            std::string(now_end - dev_end - 8, ' ') + "1.00 MiB");
  EXPECT_EQ(row.substr(header.find("FAILED") + 5, 1), "3") << row;
}

TEST(TopText, AWatchThatFellBehindSaysSo) {
  Json frame = frame_of(1);
  frame["processes"][0]["fell_behind"] = {
      {"times", 2}, {"records_missed", 5120}, {"history_from_ns", 12'300'000'000}};
  // A minute ago is before the history rebuilt: the growth is not known, and not made up.
  frame["processes"][0]["devices"][0]["growth_1m_bytes"] = nullptr;
  const std::vector<std::string> lines = lines_of(frame, {});
  ASSERT_GE(lines.size(), 7u);
  EXPECT_EQ(lines[3].substr(0, 76),
            "1000    -    running     0  1.00 MiB  2.00 MiB     1.5 s         -         -");
  EXPECT_EQ(lines[6],
            "pid 1000: top fell behind its bounded trace (5120 records written over before they "
            "were read); its figures were rebuilt from the trace, history kept from 12.3 s");
}

}  // namespace
}  // namespace gmt::analyzer
