// SPDX-License-Identifier: Apache-2.0
// The HTML report in a real browser: headless Chromium (Debian's `chromium`, which
// scripts/install-deps.sh installs) loads the page of the phases workload, driven by
// html_browser.py over the DevTools protocol. The page must load with no console error, draw
// the model's peak as its tallest stack, show the peak's values on hover, and show the largest
// allocation live at the peak (100 MiB, its stack) when the timeline is clicked at the peak,
// and again when the moment is given in the address (#click=). A screenshot of the page is kept
// in the build folder (test-artifacts/html_report.png), beside the page itself.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <sstream>

#include "tests/integration/analysis/html_report_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

// The first of `names` on PATH; "" when there is none.
std::string find_on_path(std::initializer_list<const char*> names) {
  const char* path = std::getenv("PATH");
  for (const char* name : names) {
    std::istringstream dirs(path != nullptr ? path : "");
    for (std::string dir; std::getline(dirs, dir, ':');) {
      const std::filesystem::path candidate = std::filesystem::path(dir) / name;
      if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
  }
  return "";
}

// $GMT_CHROMIUM, else the first of Chromium's names on PATH.
std::string find_chromium() {
  if (const char* given = std::getenv("GMT_CHROMIUM"); given != nullptr && *given != '\0')
    return given;
  return find_on_path({"chromium", "chromium-browser", "google-chrome"});
}

class HtmlInBrowser : public HtmlReportRun {
 protected:
  // What html_browser.py saw of `page` (a screenshot kept as test-artifacts/NAME.png); null
  // when the test is to be skipped (the reason in skip_).
  json browse(const std::string& page, const std::string& name) {
    const std::string chromium = find_chromium();
    const std::string python = find_on_path({"python3"});
    if (chromium.empty()) {
      skip_ =
          "no Chromium found (chromium, chromium-browser, google-chrome or $GMT_CHROMIUM): "
          "scripts/install-deps.sh installs Debian's chromium";
      return nullptr;
    }
    if (python.empty()) {
      skip_ = "no python3 on PATH to drive Chromium with";
      return nullptr;
    }
    std::filesystem::create_directories(GMT_ARTIFACT_DIR);
    const std::string screenshot = std::string(GMT_ARTIFACT_DIR) + "/" + name + ".png";
    std::filesystem::remove(screenshot);
    std::filesystem::copy_file(page, std::string(GMT_ARTIFACT_DIR) + "/" + name + ".html",
                               std::filesystem::copy_options::overwrite_existing);
    ProcessSpec spec;
    spec.argv = {python, GMT_HTML_BROWSER_SCRIPT, chromium, page, screenshot};
    spec.cwd = dir_;
    const ProcessResult r = run_process(spec);
    if (r.exit_code == 77) {
      skip_ = "Chromium cannot run here: " + r.err;
      return nullptr;
    }
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json(nullptr);
  }
  std::string skip_;
};

// The roles' page: the timeline stacked by role by default, a view far above the stacks named
// at the top rather than flattening them, and the role and module tables of the peak.
TEST_F(HtmlInBrowser, StacksByRoleAndShowsTheRoleAndModuleTables) {
  const ProcessResult run = run_traced("workload_roles_training", {});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string page = html({only_trace()});
  const json data = embedded_data(read_file(page));
  const json& device = data["traces"][0]["devices"][0];
  const json seen = browse(page, "html_roles");
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  ASSERT_FALSE(seen.is_null());
  EXPECT_EQ(seen["errors"], json::array()) << seen["errors"].dump(2);
  EXPECT_EQ(seen["chart"]["drawn_peak_bytes"], device["peak_bytes"]);
  EXPECT_EQ(seen["chart"]["stack_by"], "role");
  EXPECT_EQ(seen["chart"]["layers"], json({"parameter", "gradient", "optimizer_state", "activation",
                                           "temporary", "input", "allocator_cache"}));
  // The simulated GPU's context (512 MiB) puts NVML's line nine times above the 62 MiB peak.
  EXPECT_EQ(seen["chart"]["above_scale"], "nvml_process,driver_used");
  EXPECT_EQ(seen["chart"]["role_rows"], 6);  // the device's table, before any click
  EXPECT_EQ(seen["chart"]["module_rows"], 2);
}

TEST_F(HtmlInBrowser, DrawsThePeakAndAClickShowsItsLargestAllocation) {
  const ProcessResult run = run_phases();
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string page = html({only_trace()});
  const json data = embedded_data(read_file(page));
  const json& device = data["traces"][0]["devices"][0];
  ASSERT_EQ(device["peak_bytes"], 218 * kMiB);
  const json seen = browse(page, "html_report");
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  ASSERT_FALSE(seen.is_null());

  EXPECT_EQ(seen["errors"], json::array()) << seen["errors"].dump(2);
  EXPECT_EQ(seen["chart"]["charts"], 1);
  // A phase's growth adds up its calls, and its column says so.
  EXPECT_EQ(seen["chart"]["phase_headers"],
            json({"phase", "device", "calls", "peak", "growth (all calls)"}));
  EXPECT_EQ(seen["chart"]["drawn_peak_bytes"], 218 * kMiB);
  EXPECT_EQ(seen["chart"]["model_peak_bytes"], 218 * kMiB);
  EXPECT_EQ(seen["flame_total"], 218 * kMiB);
  EXPECT_EQ(seen["peak_time_ns"], device["peak_time_ns"]);
  EXPECT_NE(seen["tooltip"].get<std::string>().find("218 MiB live"), std::string::npos)
      << seen["tooltip"];

  // The click and the address: the peak's panel, its largest site first: the 100 MiB of
  // activations, made by must_alloc (the user's frame the stack starts from) via cudaMalloc,
  // called from main.
  for (const char* how : {"click", "fragment"}) {
    const json& moment = seen[how];
    EXPECT_EQ(moment["marker"], "peak") << how;
    EXPECT_EQ(moment["time_ns"], device["peak_time_ns"]) << how;
    const std::string heading = moment["heading"];
    EXPECT_EQ(heading.rfind("the peak: 218 MiB at ", 0), 0u) << heading;
    EXPECT_TRUE(heading.ends_with(" in trainer::step > backward")) << heading;
    EXPECT_EQ(moment["site_bytes"], 100 * kMiB) << how;
    EXPECT_EQ(moment["site_function"], "(anonymous namespace)::must_alloc(unsigned long)") << how;
    const std::string text = moment["site_text"];
    EXPECT_EQ(text.rfind("100 MiB in 1 allocation \u00b7 workload_phases", 0), 0u) << text;
    EXPECT_NE(text.find("must_alloc"), std::string::npos) << text;
    EXPECT_NE(text.find("via cudaMalloc"), std::string::npos) << text;
    EXPECT_NE(text.find("main "), std::string::npos) << text;
  }

  // The screenshot, a PNG, is kept for people to look at.
  const std::string png = read_file(std::string(GMT_ARTIFACT_DIR) + "/html_report.png");
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
}

}  // namespace
}  // namespace gmt::test
