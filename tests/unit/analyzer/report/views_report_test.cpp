// SPDX-License-Identifier: Apache-2.0
// A views table describes one moment in its tracked bytes and their libraries (the peak, the
// end), and gives the sample's own tracked bytes apart, which the differences pair with.
#include "analyzer/report/views_report.h"

#include <gtest/gtest.h>

#include <sstream>

namespace gmt::analyzer {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

// A sample taken after the peak, when 100 MiB of the 160 MiB peak were still live.
ViewValues sample_after_the_peak() {
  ViewValues v;
  v.time_ns = 5'000'000;
  v.exact = true;
  v.tracked_bytes = 100 * kMiB;
  v.nvml_process_bytes = 400 * kMiB;
  return v;
}

TEST(ViewsJson, TrackedBytesAndByLibraryAreTheMomentsAndTheSampleIsApart) {
  const std::map<std::string, uint64_t> at_peak = {{"libnccl", 60 * kMiB}, {"train", 100 * kMiB}};
  const nlohmann::ordered_json v = views_json(sample_after_the_peak(), 160 * kMiB, at_peak);
  EXPECT_EQ(v["tracked_bytes"], 160 * kMiB);
  uint64_t by_library = 0;
  for (const auto& [library, bytes] : v["by_library"].items()) by_library += bytes.get<uint64_t>();
  EXPECT_EQ(by_library, v["tracked_bytes"].get<uint64_t>());
  EXPECT_EQ(v["sample_tracked_bytes"], 100 * kMiB);
  // NVML's figure is the sample's: the overhead is against what was tracked then.
  EXPECT_EQ(v["context_overhead_bytes"], 300 * kMiB);
  EXPECT_EQ(v["sample_time_ns"], 5'000'000);
}

TEST(ViewsJson, WithoutASampleTheSampleFiguresAreNull) {
  const nlohmann::ordered_json v = views_json(std::nullopt, 160 * kMiB, {{"train", 160 * kMiB}});
  EXPECT_EQ(v["tracked_bytes"], 160 * kMiB);
  EXPECT_TRUE(v["sample_tracked_bytes"].is_null());
  EXPECT_TRUE(v["sample_time_ns"].is_null());
}

TEST(ViewsText, ListsTheMomentsBytesByLibraryAndTheSamplesApart) {
  std::ostringstream out;
  write_views_text("views at the peak", sample_after_the_peak(), 160 * kMiB,
                   {{"libnccl", 60 * kMiB}, {"train", 100 * kMiB}}, out);
  const std::string text = out.str();
  EXPECT_NE(text.find("      tracked (all allocations)              160 MiB\n"
                      "        owned by libnccl                    60.0 MiB\n"
                      "        owned by train                       100 MiB\n"
                      "      tracked when sampled                   100 MiB\n"),
            std::string::npos)
      << text;
}

// A program without a framework: one line says so, not a row of "missing" for each framework
// figure and each difference made of them.
TEST(ViewsText, WithoutAFrameworkOneLineSaysSo) {
  std::ostringstream out;
  write_views_text("views at the peak", sample_after_the_peak(), 160 * kMiB, {}, out);
  const std::string text = out.str();
  EXPECT_NE(text.find("      framework                                 none  (no caching "
                      "allocator's block events, no gpumemtrace_framework_view report)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("framework allocated"), std::string::npos) << text;
  EXPECT_EQ(text.find("outside the framework"), std::string::npos) << text;
  EXPECT_EQ(text.find("framework cache"), std::string::npos) << text;
}

// No sample of the moment (sampler off), or a summary, which keeps no views: the moment's
// tracked bytes and why there is nothing else, without a row per view.
TEST(ViewsText, WithoutViewsTheTrackedBytesAndWhy) {
  std::ostringstream out;
  write_views_text("views at exit", std::nullopt, 160 * kMiB, {{"train", 160 * kMiB}}, out,
                   kViewsNotInSummary);
  EXPECT_EQ(out.str(),
            "    views at exit: the other views are not kept in a summary (report the trace "
            "itself for them)\n"
            "      tracked (all allocations)              160 MiB\n"
            "        owned by train                       160 MiB\n");
}

}  // namespace
}  // namespace gmt::analyzer
