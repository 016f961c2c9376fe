// SPDX-License-Identifier: Apache-2.0
// A pool the trace cannot see into, on the simulated stack: a JAX program whose XLA allocator
// (the plugin named like JAX's, xla_pool_plugin.cpp) takes 75% of the device at its first array
// and hands every array out inside it. `report`, `peak` and the page say so, name the setting
// that shows each array and what it costs; `run --jax-allocator=platform` sets it, and each
// array is then at its line.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

constexpr uint64_t kGiB = 1024 * kMiB;

const char* const kPreallocatedNote =
    "XLA's pool holds 12.0 GiB of device 0 (75% of it) in 1 allocation, taken at once: the "
    "arrays JAX keeps in it are not seen. XLA_PYTHON_CLIENT_ALLOCATOR=platform (gpumemtrace run "
    "--jax-allocator=platform) makes each array its own allocation, at its line, at a cost: "
    "every array is then a cudaMalloc and a cudaFree, slower, with no pooling. "
    "XLA_PYTHON_CLIENT_PREALLOCATE=false costs less, but still pools: the arrays stay unseen.";

class HiddenPool : public TracedRun {
 protected:
  std::string plugin() const { return workload("jax_plugins/xla_cuda13/xla_cuda_plugin.so"); }

  ProcessResult run_cli(std::vector<std::string> args) const {
    ProcessResult r = cli(std::move(args));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r;
  }
};

TEST_F(HiddenPool, XlasPreallocationIsNamedWithTheSettingThatShowsItsArrays) {
  const ProcessResult run = run_traced("workload_jax_arrays", {plugin()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("XLA_PYTHON_CLIENT_ALLOCATOR=(unset)\n"), std::string::npos) << run.out;
  const std::string trace = only_trace();

  const json rep = report({trace});
  EXPECT_EQ(device(rep, 0)["peak_bytes"], 12 * kGiB);
  const json expected = {{"framework", "jax"},
                         {"bytes", 12 * kGiB},
                         {"allocations", 1},
                         {"preallocated", true},
                         {"device_total_bytes", 16 * kGiB},
                         {"setting", "XLA_PYTHON_CLIENT_ALLOCATOR=platform"},
                         {"run_option", "--jax-allocator=platform"},
                         {"note", kPreallocatedNote}};
  EXPECT_EQ(device(rep, 0)["hidden_pool"], expected) << device(rep, 0).dump(1);
  const ProcessResult text = run_cli({"report", trace});
  EXPECT_NE(text.out.find(std::string("\n    note          ") + kPreallocatedNote + "\n"),
            std::string::npos)
      << text.out;

  const json peak = json::parse(run_cli({"peak", "--json", trace}).out);
  EXPECT_EQ(peak["devices"][0]["hidden_pool"], expected) << peak.dump(1);
  const ProcessResult peak_text = run_cli({"peak", trace});
  EXPECT_NE(peak_text.out.find(std::string("\n  note: ") + kPreallocatedNote + "\n"),
            std::string::npos)
      << peak_text.out;

  // The page lists it with the trace's notes.
  const std::string page = dir_ + "/page.html";
  run_cli({"html", trace, "-o", page});
  const std::string html = read_file(page);
  EXPECT_NE(html.find(json(kPreallocatedNote).dump()), std::string::npos);
}

// A summary keeps the pool: `report` of it gives the same note, text and JSON.
TEST_F(HiddenPool, ASummaryKeepsThePoolsNote) {
  const ProcessResult run = run_traced("workload_jax_arrays", {plugin()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  const std::string summary = dir_ + "/jax.summary.json";
  run_cli({"summarize", trace, "-o", summary});
  EXPECT_EQ(device(report({summary}), 0)["hidden_pool"], device(report({trace}), 0)["hidden_pool"]);
  EXPECT_FALSE(device(report({summary}), 0)["hidden_pool"].is_null());
  const ProcessResult text = run_cli({"report", summary});
  EXPECT_NE(text.out.find(std::string("\n    note          ") + kPreallocatedNote + "\n"),
            std::string::npos)
      << text.out;
}

// Grown as needed (XLA_PYTHON_CLIENT_PREALLOCATE=false), the pool is in regions that double: the
// 64 MiB array, then 128 and 256 MiB for the 16 MiB ones. Still pooled, still unseen.
TEST_F(HiddenPool, AGrowingPoolIsNamedToo) {
  const ProcessResult run =
      run_traced("workload_jax_arrays", {plugin()}, {{"XLA_PYTHON_CLIENT_PREALLOCATE", "false"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json rep = report({only_trace()});
  EXPECT_EQ(device(rep, 0)["peak_bytes"], 448 * kMiB);
  const json& pool = device(rep, 0)["hidden_pool"];
  EXPECT_EQ(pool["bytes"], 448 * kMiB);
  EXPECT_EQ(pool["allocations"], 3);
  EXPECT_EQ(pool["preallocated"], false);
  EXPECT_EQ(pool["note"],
            "XLA's pool holds 448 MiB of device 0 (3% of it) in 3 allocations, grown as needed: "
            "the arrays JAX keeps in it are not seen. XLA_PYTHON_CLIENT_ALLOCATOR=platform "
            "(gpumemtrace run --jax-allocator=platform) makes each array its own allocation, at "
            "its line, at a cost: every array is then a cudaMalloc and a cudaFree, slower, with no "
            "pooling.");
}

TEST_F(HiddenPool, AnOrdinaryProgramHasNoPoolNote) {
  const json rep = traced_report("workload_runtime_shared", {"alloc:a:" + mib(64)});
  EXPECT_FALSE(device(rep, 0).contains("hidden_pool")) << device(rep, 0).dump(1);
  const std::string trace = only_trace();
  EXPECT_EQ(run_cli({"report", trace}).out.find("note"), std::string::npos);
  EXPECT_EQ(run_cli({"peak", trace}).out.find("note"), std::string::npos);
  const json peak = json::parse(run_cli({"peak", "--json", trace}).out);
  EXPECT_FALSE(peak["devices"][0].contains("hidden_pool")) << peak.dump(1);
}

// `run --jax-allocator=platform` sets XLA's platform allocator in the program (it prints what it
// got, and the trace keeps it): each array is then its own allocation, the kept one at its line,
// and there is no pool to note.
TEST_F(HiddenPool, RunSetsThePlatformAllocatorAndEachArrayIsAtItsLine) {
  std::map<std::string, std::string> env = base_env();
  env.erase("GPUMEMTRACE_OUTPUT");
  if (!sanitizer_runtime().empty()) env["LD_PRELOAD"] = sanitizer_runtime();
  const ProcessResult run = cli({"run", "--jax-allocator=platform", "-o", dir_ + "/run.%p.gmt",
                                 "--", workload("workload_jax_arrays"), plugin()},
                                env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("XLA_PYTHON_CLIENT_ALLOCATOR=platform\n"), std::string::npos) << run.out;
  const int64_t keep_line = printed(run.out, "keep_line");

  const json rep = report({only_trace()});
  const json& envs = rep["traces"][0]["env"];
  EXPECT_NE(std::find(envs.begin(), envs.end(), "XLA_PYTHON_CLIENT_ALLOCATOR=platform"), envs.end())
      << envs.dump();
  EXPECT_FALSE(device(rep, 0).contains("hidden_pool")) << device(rep, 0).dump(1);
  EXPECT_EQ(device(rep, 0)["peak_bytes"], 80 * kMiB);  // the kept array and one temporary
  bool kept_at_its_line = false;
  for (const json& site : device(rep, 0)["peak_sites"]) {
    if (site["bytes"] != 64 * kMiB) continue;
    for (const json& f : site["frames"]) {
      const std::string function = f["function"].is_string() ? f["function"] : "";
      const std::string file = f["file"].is_string() ? f["file"] : "";
      kept_at_its_line |= function.ends_with("keep()") && file.ends_with("jax_arrays.cpp") &&
                          f["line"] == keep_line;
    }
  }
  EXPECT_TRUE(kept_at_its_line) << device(rep, 0)["peak_sites"].dump(1);
}

// An allocator the user had set is replaced, and they are told.
TEST_F(HiddenPool, RunSaysWhichAllocatorItReplaced) {
  std::map<std::string, std::string> env = base_env();
  env.erase("GPUMEMTRACE_OUTPUT");
  env["XLA_PYTHON_CLIENT_ALLOCATOR"] = "bfc";
  if (!sanitizer_runtime().empty()) env["LD_PRELOAD"] = sanitizer_runtime();
  const ProcessResult run = cli({"run", "--jax-allocator", "platform", "-o", dir_ + "/r.%p.gmt",
                                 "--", workload("workload_jax_arrays"), plugin()},
                                env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("XLA_PYTHON_CLIENT_ALLOCATOR=platform\n"), std::string::npos) << run.out;
  EXPECT_NE(run.err.find("gpumemtrace run: XLA_PYTHON_CLIENT_ALLOCATOR was 'bfc'; the program "
                         "runs with 'platform' (--jax-allocator)\n"),
            std::string::npos)
      << run.err;
}

}  // namespace
}  // namespace gmt::test
