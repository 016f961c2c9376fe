// SPDX-License-Identifier: Apache-2.0
// The allocation view's level of detail: with room for three whole allocations, the phases
// workload's three largest (its 100 MiB activations) are kept whole and the rest are added up
// per site; the series are what each site held at its interval's moment (when the device held
// the most in it), so the tallest stack the page draws is still the model's peak, to the byte.
#include <gtest/gtest.h>

#include <fstream>

#include "analyzer/html/html_page.h"
#include "analyzer/html/page_data.h"
#include "analyzer/report/report.h"
#include "tests/integration/analysis/html_page_probe_run.h"

using nlohmann::json;

namespace gmt::test {
namespace {

class HtmlLevelOfDetail : public HtmlPageProbe {};

TEST_F(HtmlLevelOfDetail, TheSmallerAllocationsAddedUpPerSiteKeepThePeak) {
  const ProcessResult run = run_phases();
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  analyzer::ReportInput input = analyzer::load_traces({trace}, 1);
  analyzer::HtmlLimits limits;
  limits.allocations.bands = 3;
  const nlohmann::ordered_json data = analyzer::html_report_data(input, limits, 1);
  const std::string page = dir_ + "/few-bands.html";
  {
    std::ofstream out(page);
    analyzer::write_html_page(data, out);
  }
  const json parsed = json::parse(data.dump());
  const json& device = parsed["traces"][0]["devices"][0];
  const json& a = device["allocations"];
  EXPECT_EQ(a["kept"], 3);
  for (const json& size : a["bands"]["size"]) EXPECT_EQ(size, 100 * kMiB);
  EXPECT_EQ(a["small_count"].get<uint64_t>() + 3, device["alloc_count"].get<uint64_t>());
  EXPECT_FALSE(a["series"].empty());
  const json seen = probe(page, json::array({{{"eval", R"((() => {
    const v = window.gmtReport.allocations[0];
    v.zoom(v.full[0], v.full[1]);
    return Number(v.root.dataset.drawnMaxBytes);
  })())"}}}));
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  ASSERT_FALSE(seen.is_null());
  EXPECT_EQ(seen["errors"], json::array()) << seen["errors"].dump(2);
  const json rep = report({trace});
  EXPECT_EQ(seen["results"][0], rep["devices"][0]["peak_bytes"]);
}

}  // namespace
}  // namespace gmt::test

#ifdef GMT_SYNTHETIC_TRACE
namespace gmt::test {
namespace {

// A synthetic PyTorch training run (tests/bench/synthetic_trace --framework-blocks, 400 000
// events: ResNet-50's block events behind PyTorch's caching allocator): more allocations than
// are kept whole, small blocks in series, the cache from the segments' lifetimes; the tallest
// stack drawn is still the model's peak, and the page logs no error.
TEST_F(HtmlLevelOfDetail, ASyntheticPyTorchRunsTallestStackIsItsPeak) {
  const std::string trace = dir_ + "/synthetic.gmt";
  ProcessSpec spec;
  spec.argv = {GMT_SYNTHETIC_TRACE, "--output", trace, "--events", "400000", "--framework-blocks"};
  spec.cwd = dir_;
  const ProcessResult made = run_process(spec);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  analyzer::ReportInput input = analyzer::load_traces({trace}, 1);
  analyzer::HtmlLimits limits;
  limits.allocations.bands = 2000;  // fewer than the run's blocks: the rest are in series
  const nlohmann::ordered_json data = analyzer::html_report_data(input, limits, 1);
  const std::string page = dir_ + "/synthetic.html";
  {
    std::ofstream out(page);
    analyzer::write_html_page(data, out);
  }
  const json parsed = json::parse(data.dump());
  const json& a = parsed["traces"][0]["devices"][0]["allocations"];
  EXPECT_EQ(a["kept"], 2000);
  EXPECT_GT(a["small_count"].get<uint64_t>(), 0u);
  EXPECT_FALSE(a["segment_spans"].is_null());
  const json seen = probe(page, json::array({{{"eval", R"((() => {
    const v = window.gmtReport.allocations[0];
    v.zoom(v.full[0], v.full[1]);
    return Number(v.root.dataset.drawnMaxBytes);
  })())"}}}));
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  ASSERT_FALSE(seen.is_null());
  EXPECT_EQ(seen["errors"], json::array()) << seen["errors"].dump(2);
  const json rep = report({trace});
  EXPECT_EQ(seen["results"][0], rep["devices"][0]["peak_bytes"]);
}

}  // namespace
}  // namespace gmt::test
#endif
