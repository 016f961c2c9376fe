// SPDX-License-Identifier: Apache-2.0
// The views the sampler records (NVML, the driver, the framework's own figures) reconciled with
// the tracked allocations, and the phases from NVTX and gpumemtrace.h, on the simulated GPU:
// 300 MiB per context, 1 GiB of "other processes" and the phases workload's known sizes.
#include <dlfcn.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "tests/integration/traced_run_fixture.h"

namespace gmt::test {
namespace {

using nlohmann::json;

class ViewsAndPhases : public TracedRun {
 protected:
  // The phases workload under `gpumemtrace run`, which points NVTX at the library.
  ProcessResult run_phases(std::map<std::string, std::string> extra = {},
                           const std::string& arg = "500") {
    std::map<std::string, std::string> env = base_env();
    env.erase("GPUMEMTRACE_OUTPUT");
    env["FAKECUDA_OTHER_PROCESS_MEMORY"] = std::to_string(1024 * kMiB);
    if (!sanitizer_runtime().empty()) env["LD_PRELOAD"] = sanitizer_runtime();
    for (const auto& [k, v] : extra) env[k] = v;
    return cli({"run", "-o", "trace.%p.gmt", "--", workload("workload_phases"), arg}, env);
  }

  // The first line of `text` that contains `part`.
  static std::string line_with(const std::string& text, const std::string& part) {
    const std::size_t at = text.find(part);
    if (at == std::string::npos) return "";
    const std::size_t begin = text.rfind('\n', at) + 1;
    return text.substr(begin, text.find('\n', at) - begin);
  }

  static json phase(const json& report, const std::string& name) {
    for (const json& p : report["phases"]) {
      if (p["name"] == name) return p;
    }
    ADD_FAILURE() << "no phase " << name << " in " << report["phases"].dump();
    return json::object();
  }

  static void expect_phase(const json& report, const std::string& name, uint64_t calls,
                           uint64_t peak_mib, int64_t growth_mib) {
    const json p = phase(report, name);
    EXPECT_EQ(p.value("device", -2), 0) << name;
    EXPECT_EQ(p.value("calls", uint64_t{0}), calls) << name;
    EXPECT_EQ(p.value("peak_bytes", uint64_t{0}), peak_mib * kMiB) << name;
    EXPECT_EQ(p.value("growth_bytes", int64_t{0}), growth_mib * static_cast<int64_t>(kMiB)) << name;
  }
};

TEST_F(ViewsAndPhases, NvtxAndHeaderPhasesHaveExactPeaksAndGrowth) {
  const ProcessResult r = run_phases();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json rep = report({only_trace()});
  // In order of first start; "init" was pushed before the program's first CUDA call.
  std::vector<std::string> names;
  for (const json& p : rep["phases"]) names.push_back(p["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"init", "trainer::step", "forward", "backward",
                                             "trainer::checkpoint", "optimizer", "shutdown"}));
  expect_phase(rep, "init", 1, 64, 64);
  expect_phase(rep, "trainer::step", 3, 218, 6);
  expect_phase(rep, "forward", 3, 188, 300);
  expect_phase(rep, "backward", 3, 218, -150);
  // Popped with nvtxRangePopPayload, as NCCL pops its ranges: closed there, before the free.
  expect_phase(rep, "trainer::checkpoint", 1, 86, 16);
  expect_phase(rep, "optimizer", 1, 78, 0);
  expect_phase(rep, "shutdown", 1, 70, 0);
  EXPECT_EQ(device(rep, 0)["peak_bytes"], 218 * kMiB);
  EXPECT_EQ(device(rep, 0)["peak_phase"], "trainer::step > backward");
  // In text, growth is said to be summed over the calls: forward's 300 MiB are 100 per call.
  const ProcessResult text = cli({"report", only_trace()});
  EXPECT_EQ(line_with(text.out, "  phases ("),
            "  phases (NVTX ranges and gpumemtrace.h markers; growth: what its calls left live, "
            "summed):")
      << text.out;
  EXPECT_EQ(line_with(text.out, "    forward "),
            "    forward                                0       3     188 MiB     300 MiB")
      << text.out;
}

TEST_F(ViewsAndPhases, ViewsAtThePeakNameEverySlice) {
  const ProcessResult r = run_phases();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json rep = report({only_trace()});
  const json& d = device(rep, 0);
  EXPECT_EQ(d["pci_bus_id"], "0000:10:00.0");
  EXPECT_EQ(d["nvml_index"], 0);
  const json& peak = d["views"]["at_peak"];
  EXPECT_EQ(peak["exact"], true) << peak.dump();
  EXPECT_EQ(peak["tracked_bytes"], 218 * kMiB);
  EXPECT_EQ(peak["framework_allocated_bytes"], 150 * kMiB);
  EXPECT_EQ(peak["framework_reserved_bytes"], 218 * kMiB);
  EXPECT_EQ(peak["framework_cache_bytes"], 68 * kMiB);
  EXPECT_EQ(peak["outside_framework_bytes"], 0);
  EXPECT_EQ(peak["nvml_process_bytes"], (218 + 300) * kMiB);
  EXPECT_EQ(peak["context_overhead_bytes"], 300 * kMiB);
  EXPECT_EQ(peak["other_processes_bytes"], 1024 * kMiB);
  EXPECT_EQ(peak["driver_used_bytes"], (218 + 300 + 1024) * kMiB);
  EXPECT_EQ(peak["nvml_device_used_bytes"], (218 + 300 + 1024) * kMiB);
  EXPECT_EQ(peak["by_library"], (json{{"workload_phases", 218 * kMiB}}));

  // At exit: the weights and the three 2 MiB leaks. The framework's report is from the peak,
  // another moment, so it is not joined.
  const json& end = d["views"]["at_exit"];
  EXPECT_EQ(end["tracked_bytes"], 70 * kMiB);
  EXPECT_EQ(end["nvml_process_bytes"], (70 + 300) * kMiB);
  EXPECT_EQ(end["context_overhead_bytes"], 300 * kMiB);
  EXPECT_EQ(end["other_processes_bytes"], 1024 * kMiB);
  EXPECT_TRUE(end["framework_allocated_bytes"].is_null());
  EXPECT_EQ(end["by_library"], (json{{"workload_phases", 70 * kMiB}}));
  EXPECT_GT(rep["traces"][0]["view_samples"].get<int>(), 2);
  EXPECT_EQ(rep["traces"][0]["notes"], json::array());

  const ProcessResult text = cli({"report", only_trace()});
  EXPECT_EQ(line_with(text.out, "context and module overhead"),
            "        context and module overhead          300 MiB  NVML process - tracked")
      << text.out;
}

TEST_F(ViewsAndPhases, MissingNvmlIsSaidAndTheDriverViewRemains) {
  if (void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(nvml);
    GTEST_SKIP() << "this machine has a real NVML, which the library would find";
  }
  // A library folder with the simulated runtime and driver but no NVML (under ASan, dlopen is
  // the sanitizer's, so the runtime's own RUNPATH cannot be relied on to find the driver).
  const std::string libs = dir_ + "/libs-without-nvml";
  std::filesystem::create_directories(libs);
  for (const char* name : {"libcuda.so.1", "libcudart.so.13"}) {
    std::filesystem::create_symlink(std::string(GMT_FAKECUDA_LIB_DIR) + "/" + name,
                                    libs + "/" + name);
  }
  const ProcessResult r = run_phases({{"LD_LIBRARY_PATH", libs}}, "100");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json rep = report({only_trace()});
  EXPECT_EQ(rep["traces"][0]["notes"],
            (json{"nvml view missing: libnvidia-ml.so.1 could not be loaded"}));
  const json& peak = device(rep, 0)["views"]["at_peak"];
  EXPECT_TRUE(peak["nvml_process_bytes"].is_null());
  EXPECT_TRUE(peak["nvml_device_used_bytes"].is_null());
  EXPECT_TRUE(peak["context_overhead_bytes"].is_null());
  EXPECT_TRUE(peak["other_processes_bytes"].is_null());
  EXPECT_EQ(peak["driver_used_bytes"], (218 + 300 + 1024) * kMiB);
  EXPECT_EQ(device(rep, 0)["nvml_index"], -1);
  const ProcessResult text = cli({"report", only_trace()});
  EXPECT_EQ(line_with(text.out, "NVML, this process"),
            "      NVML, this process                     missing")
      << text.out;
  EXPECT_NE(text.out.find("nvml view missing: libnvidia-ml.so.1 could not be loaded"),
            std::string::npos)
      << text.out;
}

TEST_F(ViewsAndPhases, WithTheSamplerOffThereAreNoViewsButStillPhases) {
  const ProcessResult r = run_phases({{"GPUMEMTRACE_SAMPLE_MS", "0"}}, "0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json rep = report({only_trace()});
  EXPECT_EQ(rep["traces"][0]["view_samples"], 0);
  const json& peak = device(rep, 0)["views"]["at_peak"];
  EXPECT_TRUE(peak["nvml_process_bytes"].is_null());
  EXPECT_TRUE(peak["driver_used_bytes"].is_null());
  EXPECT_EQ(peak["tracked_bytes"], 218 * kMiB);
  // The framework's report needs no sampler.
  EXPECT_EQ(peak["framework_reserved_bytes"], 218 * kMiB);
  expect_phase(rep, "backward", 3, 218, -150);
}

// `peak --phase`: the replay's moment, with its sites, agrees with the views' phase figures,
// which are computed apart (ViewsReplay); the forward's moment is the last step's scratch.
TEST_F(ViewsAndPhases, APhasesPeakIsItsHighestMomentWithWhatWasLiveThen) {
  const ProcessResult r = run_phases({{"GPUMEMTRACE_SAMPLE_MS", "0"}}, "0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string trace = only_trace();
  const json rep = report({trace});
  const std::map<std::string, std::pair<uint64_t, uint64_t>> runs_and_live_at_start = {
      {"init", {1, 0}},       {"trainer::step", {3, 64}},       {"forward", {3, 64}},
      {"backward", {3, 164}}, {"trainer::checkpoint", {1, 70}}, {"optimizer", {1, 70}},
      {"shutdown", {1, 70}}};
  for (const auto& [name, expected] : runs_and_live_at_start) {
    const ProcessResult peak = cli({"peak", "--json", "--top", "100", "--phase", name, trace});
    ASSERT_EQ(peak.exit_code, 0) << name << ": " << peak.err;
    const json answer = json::parse(peak.out);
    EXPECT_EQ(answer["phase"]["name"], name);
    EXPECT_EQ(answer["phase"]["runs"], expected.first) << name;
    const json& d = answer["devices"][0];
    EXPECT_EQ(d["live_at_phase_start_bytes"], expected.second * kMiB) << name;
    EXPECT_EQ(d["peak_bytes"], phase(rep, name)["peak_bytes"]) << name;
    uint64_t sum = 0;
    for (const json& g : d["groups"]) sum += g["bytes"].get<uint64_t>();
    EXPECT_EQ(sum, d["peak_bytes"]) << name;
  }
  const ProcessResult forward = cli({"peak", "--json", "--phase", "forward", trace});
  ASSERT_EQ(forward.exit_code, 0) << forward.err;
  std::vector<std::pair<uint64_t, uint64_t>> groups;  // MiB, count
  const json forward_peak = json::parse(forward.out);
  for (const json& g : forward_peak["devices"][0]["groups"])
    groups.emplace_back(g["bytes"].get<uint64_t>() / kMiB, g["count"].get<uint64_t>());
  EXPECT_EQ(groups,
            (std::vector<std::pair<uint64_t, uint64_t>>{{100, 1}, {64, 1}, {20, 1}, {4, 2}}));
  const ProcessResult text = cli({"peak", "--phase", "optimizer", trace});
  const std::string head = line_with(text.out, "peak of");
  EXPECT_TRUE(head.starts_with("peak of device 0 in phase \"optimizer\": 78.0 MiB (81788928 "
                               "bytes) at ") &&
              head.ends_with(", in 5 allocations"))
      << head;
  EXPECT_NE(text.out.find("  the phase ran 1 time, first at "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(", with 70.0 MiB live as it started\n"), std::string::npos) << text.out;

  const ProcessResult unknown = cli({"peak", "--phase", "nope", trace});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_EQ(unknown.out, "");
  EXPECT_EQ(unknown.err, "gpumemtrace: " + trace +
                             ": no phase \"nope\" in the trace (its phases: \"init\", "
                             "\"trainer::step\", \"forward\", \"backward\", "
                             "\"trainer::checkpoint\", \"optimizer\", \"shutdown\")\n");
}

TEST_F(ViewsAndPhases, AnotherToolsNvtxInjectionIsLeftAloneAndSaid) {
  const ProcessResult r = run_phases({{"NVTX_INJECTION64_PATH", dir_ + "/other-tool.so"}}, "0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("NVTX_INJECTION64_PATH is already set (" + dir_ + "/other-tool.so)"),
            std::string::npos)
      << r.err;
  const json rep = report({only_trace()});
  // Only the gpumemtrace.h phase: NVTX went to the other tool (which does not exist here).
  ASSERT_EQ(rep["phases"].size(), 1u) << rep["phases"].dump();
  expect_phase(rep, "optimizer", 1, 78, 0);
}

TEST_F(ViewsAndPhases, PhasesWithoutCudaLeaveNoTrace) {
  const ProcessResult r = run_phases({}, "nvtx-only");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ok\n");
  EXPECT_TRUE(traces().empty());
}

TEST_F(ViewsAndPhases, TheTraceCarriesTheRankAndTheJobVariables) {
  const ProcessResult r =
      run_phases({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"CUDA_VISIBLE_DEVICES", "0"}}, "0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json rep = report({only_trace()});
  EXPECT_EQ(rep["traces"][0]["rank"], 3);
  EXPECT_EQ(rep["traces"][0]["env"], (json{"RANK=3", "WORLD_SIZE=4", "CUDA_VISIBLE_DEVICES=0"}));
}

}  // namespace
}  // namespace gmt::test
