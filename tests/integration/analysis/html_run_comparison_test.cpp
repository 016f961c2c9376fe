// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace diff --html` in headless Chromium (html_page_probe.py drives it): two runs of the
// roles workload (tests/workloads/roles_training.cpp; the second keeps twice the activations),
// drawn by step, with what moved by role and by module: the figures `diff --json` gives, to the
// byte and in its order, and no JavaScript error. And the segments view of `gpumemtrace html`
// marks a CUDA graph's private pool as such (the roles hooks' stand-in of PyTorch, capturing a
// forward into a pool of its own).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/integration/analysis/html_page_probe_run.h"

using nlohmann::json;

namespace gmt::test {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

class HtmlRunComparison : public HtmlPageProbe {
 protected:
  // The roles workload traced twice: as it is, then keeping twice as much for backward.
  std::pair<std::string, std::string> two_runs() {
    const std::string before = traced_run("workload_roles_training", {});
    return {before, traced_run("workload_roles_training", {"2"})};
  }

  json diff_json(const std::string& before, const std::string& after) {
    const ProcessResult r = cli({"diff", "--json", before, after});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json::object();
  }
};

// The rows of a change table, as the page shows them: [name, before, after, change].
constexpr const char* kRows = R"((() => [...document.querySelectorAll('table.CLASS tbody tr')]
  .map((r) => [r.dataset.name, Number(r.dataset.before), Number(r.dataset.after),
               Number(r.dataset.change), r.querySelector('td.change').textContent]))())";

std::string rows_of(const std::string& table) {
  std::string expression = kRows;
  expression.replace(expression.find("CLASS"), 5, table);
  return expression;
}

// The same rows from diff --json's device: [name, before, after, change].
json expected_rows(const json& rows, const char* name) {
  json out = json::array();
  for (const json& r : rows)
    out.push_back({r[name], r["peak_before"], r["peak_after"], r["peak_change"]});
  return out;
}

TEST_F(HtmlRunComparison, TheDiffPageShowsDiffJsonsChangesByRoleAndModule) {
  const auto [before, after] = two_runs();
  ASSERT_FALSE(after.empty());
  const json diff = diff_json(before, after);
  ASSERT_EQ(diff["devices"].size(), 1u) << diff.dump();
  const json& device = diff["devices"][0];
  // What the workload makes: each layer keeps 8 MiB more for backward, nothing else moves; the
  // largest change first.
  ASSERT_TRUE(device.contains("by_role")) << device.dump();
  ASSERT_FALSE(device["by_role"].empty());
  EXPECT_EQ(device["by_role"][0]["role"], "activation");
  EXPECT_EQ(device["by_role"][0]["peak_before"], 16 * kMiB);
  EXPECT_EQ(device["by_role"][0]["peak_after"], 32 * kMiB);
  EXPECT_EQ(device["by_role"][0]["peak_change"], 16 * kMiB);
  for (std::size_t i = 1; i < device["by_role"].size(); ++i) {
    if (device["by_role"][i]["role"] != "allocator_cache") {
      EXPECT_EQ(device["by_role"][i]["peak_change"], 0) << device["by_role"][i].dump();
    }
  }
  ASSERT_EQ(device["by_module"].size(), 2u) << device.dump();
  for (const json& m : device["by_module"]) {
    EXPECT_TRUE(m["module"] == "fc1" || m["module"] == "fc2") << m.dump();
    EXPECT_EQ(m["peak_change"], 8 * kMiB) << m.dump();
  }

  const std::string page = dir_ + "/diff.html";
  const ProcessResult made = cli({"diff", "--html", page, before, after});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_EQ(made.out, "");  // the page only, as `html -o` writes
  const json seen = probe(
      page, json::array({
                {{"eval", rows_of("role-changes")}},
                {{"eval", rows_of("module-changes")}},
                {{"eval", "Number(document.querySelector('.peak-line b').dataset.bytes)"}},
                {{"eval", "document.querySelector('.alignment').dataset.step"}},
                {{"eval", R"([...document.querySelectorAll('.chart.compared')].map((c) =>
                    [c.dataset.run, Number(c.dataset.steps), Number(c.dataset.drawnPeakBytes)]))"}},
                // The pointer over the second step of the first run's timeline: both runs' bytes.
                {{"move", R"((() => { const c = window.gmtComparison.charts[0];
                    const canvas = c.lanes[0].canvas; canvas.scrollIntoView();
                    const r = canvas.getBoundingClientRect();
                    return {x: r.left + c.xOf(1.5), y: r.top + r.height / 2}; })())"}},
                {{"eval", R"([...document.querySelectorAll('.compare-tip .tip-run')].map((s) =>
                    s.dataset.run))"}},
            }));
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  ASSERT_FALSE(seen.is_null());
  EXPECT_EQ(seen["errors"], json::array()) << seen["errors"].dump(2);
  const json& r = seen["results"];
  // The page's rows are diff --json's, in its order (the largest change first).
  json roles = json::array();
  for (const json& row : r[0]) roles.push_back({row[0], row[1], row[2], row[3]});
  EXPECT_EQ(roles, expected_rows(device["by_role"], "role"));
  EXPECT_EQ(r[0][0][4], "+16.0 MiB");
  json modules = json::array();
  for (const json& row : r[1]) modules.push_back({row[0], row[1], row[2], row[3]});
  EXPECT_EQ(modules, expected_rows(device["by_module"], "module"));
  EXPECT_EQ(r[2], device["peak_change"]);
  // Drawn by the optimizer's steps, two in each run; each run's tallest stack is its peak.
  EXPECT_EQ(r[3], "optimizer step (AdamW)");
  EXPECT_EQ(r[4], json::array({json::array({"before", 2, device["peak_before"]}),
                               json::array({"after", 2, device["peak_after"]})}));
  EXPECT_EQ(r[6], json::array({"before", "after"}));
}

// Runs without steps or roles (a plain cudaMalloc of 2 MiB, then of 5 MiB, the diff tests'
// workload): both drawn on one time axis from the first allocation, each run's tallest stack its
// peak, and the one site that moved with diff --json's figures.
TEST_F(HtmlRunComparison, RunsWithoutStepsAreAlignedByTimeAndTheirSitesChangesAreDiffs) {
  const std::string before = traced_run("workload_runtime_shared", {"alloc:a:2097152"});
  const std::string after = traced_run("workload_runtime_shared", {"alloc:a:5242880"});
  const json diff = diff_json(before, after);
  ASSERT_EQ(diff["sites"].size(), 1u) << diff.dump();
  EXPECT_EQ(diff["sites"][0]["peak_change"], 3 * kMiB);
  EXPECT_FALSE(diff["devices"][0].contains("by_role"));
  const std::string page = dir_ + "/diff.html";
  ASSERT_EQ(cli({"diff", "--html", page, before, after}).exit_code, 0);
  const json seen = probe(
      page,
      json::array({
          {{"eval", "document.querySelector('.alignment').dataset.step"}},
          {{"eval", R"([...document.querySelectorAll('.chart.compared')].map((c) =>
                    [c.dataset.run, c.dataset.by, Number(c.dataset.drawnPeakBytes)]))"}},
          {{"eval", R"([...document.querySelectorAll('table.site-changes tbody tr')].map((r) =>
                    [r.dataset.site, Number(r.dataset.peakChange), Number(r.dataset.leakChange)]))"}},
          {{"eval", "document.querySelectorAll('table.role-changes').length"}},
      }));
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  ASSERT_FALSE(seen.is_null());
  EXPECT_EQ(seen["errors"], json::array()) << seen["errors"].dump(2);
  const json& r = seen["results"];
  EXPECT_EQ(r[0], "");
  EXPECT_EQ(r[1], json::array({json::array({"before", "library", 2 * kMiB}),
                               json::array({"after", "library", 5 * kMiB})}));
  EXPECT_EQ(r[2], json::array({json::array(
                      {diff["sites"][0]["site"], 3 * kMiB, diff["sites"][0]["leak_change"]})}));
  EXPECT_EQ(r[3], 0);
}

// The roles hooks' stand-in captures a forward into a CUDA graph whose blocks come from a 32 MiB
// segment taken in the capture: the page's data marks that segment, and only it, as the graph's
// pool, and the segments view at a moment after the capture labels it so.
TEST_F(HtmlRunComparison, TheSegmentsViewLabelsACudaGraphsPrivatePool) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  ProcessSpec spec;
  spec.argv = {"/usr/bin/env",
               "python3",
               workload("roles_hooks_standin.py"),
               std::string(GMT_FAKECUDA_LIB_DIR) + "/libcudart.so.13",
               workload("gpumemtrace_roles.py"),
               "graph-pool"};
  spec.set_env = base_env();
  spec.set_env["LD_PRELOAD"] = preload();
  spec.cwd = dir_;
  const ProcessResult run = run_process(spec);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string page = html({only_trace()});
  const json data = embedded_data(read_file(page));
  const json& spans = data["traces"][0]["devices"][0]["allocations"]["segment_spans"];
  ASSERT_TRUE(spans.is_object()) << spans.dump();
  std::vector<uint64_t> pool_sizes, other_sizes;
  uint64_t pool_start = 0;
  for (std::size_t i = 0; i < spans["size"].size(); ++i) {
    if (spans["graph_pool"][i].get<bool>()) {
      pool_sizes.push_back(spans["size"][i]);
      pool_start = spans["start"][i];
    } else {
      other_sizes.push_back(spans["size"][i]);
    }
  }
  EXPECT_EQ(pool_sizes, std::vector<uint64_t>{32 * kMiB});
  EXPECT_EQ(other_sizes, std::vector<uint64_t>{512 * kMiB});
  const std::string at = std::to_string(pool_start + 1);
  const json seen = probe(
      page, json::array({
                {{"eval", "(() => { const s = window.gmtReport.segments[0]; s.showAt(" + at +
                              ", null); return s.root.dataset.timeNs; })()"}},
                {{"eval", R"([...document.querySelectorAll('.segments .segment-row')].map((r) =>
                    [r.dataset.kinds, r.querySelector('.segment-label').textContent,
                     r.querySelector('.segment-bar').classList.contains('graph-pool')]))"}},
            }));
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  ASSERT_FALSE(seen.is_null());
  EXPECT_EQ(seen["errors"], json::array()) << seen["errors"].dump(2);
  const json& r = seen["results"];
  EXPECT_EQ(r[0], at);
  // By address: the program's segment first (taken at the start), then the pool's.
  EXPECT_EQ(r[1],
            json::array({json::array({"", "512 MiB pytorch", false}),
                         json::array({"graph_pool", "32.0 MiB pytorch CUDA graph pool", true})}))
      << r[1].dump();
}

}  // namespace
}  // namespace gmt::test
