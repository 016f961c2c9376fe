// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace html` checked through the data the page embeds, against the workloads' known
// sizes and the model's own figures (`report --json`): the timeline peaks at the peak and its
// library layers add up to it in every interval, the phases, the views at the peak, the leaks,
// the flame graph's bytes, failed allocations with their holders, and the table of processes.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "tests/integration/analysis/html_report_fixture.h"
#include "tests/integration/analysis/phases_workload.h"

using nlohmann::json;

namespace gmt::test {
namespace {

class HtmlReport : public HtmlReportRun {};

TEST_F(HtmlReport, TimelinePhasesViewsAndLeaksAreTheModels) {
  const ProcessResult run = run_phases();
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  const std::string page = read_file(html({trace}));
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  // Self-contained: nothing is fetched when the page opens.
  for (const char* fetch : {"src=", "href=\"http", "@import", "url("}) {
    EXPECT_EQ(page.find(fetch), std::string::npos) << fetch;
  }
  const json data = embedded_data(page);
  const json rep = report({trace});

  ASSERT_EQ(data["traces"].size(), 1u);
  const json& t = data["traces"][0];
  EXPECT_EQ(t["pid"], rep["traces"][0]["pid"]);
  EXPECT_EQ(data["processes"], json::array());  // one process: no table of processes
  ASSERT_EQ(t["devices"].size(), 1u);
  const json& d = t["devices"][0];
  EXPECT_EQ(d["device"], 0);
  EXPECT_EQ(d["peak_bytes"], 218 * kMiB);
  EXPECT_EQ(d["peak_bytes"], device(rep, 0)["peak_bytes"]);
  EXPECT_EQ(d["peak_time_ns"], device(rep, 0)["peak_time_ns"]);
  EXPECT_EQ(d["peak_phase"], "trainer::step > backward");
  EXPECT_EQ(d["live_at_exit_bytes"], 70 * kMiB);

  // The timeline: bounded, peaks exactly at the peak in the peak's interval, and the layers
  // (one library here: the program) add up to each interval's total.
  const json& tl = d["timeline"];
  const auto resident = tl["resident"].get<std::vector<uint64_t>>();
  const uint64_t resolution = tl["resolution_ns"];
  ASSERT_FALSE(resident.empty());
  EXPECT_LE(resident.size(), 4000u);
  EXPECT_EQ(data["limits"]["buckets_per_device"], 4000);
  EXPECT_EQ(*std::max_element(resident.begin(), resident.end()), 218 * kMiB);
  EXPECT_EQ(resident.at(d["peak_time_ns"].get<uint64_t>() / resolution), 218 * kMiB);
  ASSERT_EQ(tl["libraries"].size(), 1u);
  EXPECT_EQ(tl["libraries"][0]["name"], "workload_phases");
  EXPECT_EQ(tl["libraries"][0]["bytes"].get<std::vector<uint64_t>>(), resident);
  // No framework hooks: no roles to stack by, and no role table.
  EXPECT_EQ(tl["roles"], json::array());
  EXPECT_TRUE(d["roles_at_peak"].is_null());

  // Views drawn as lines: the framework's report at the peak, NVML's and the driver's samples.
  auto most = [&tl](const char* view) {
    uint64_t m = 0;
    for (const json& point : tl["views"][view]) m = std::max(m, point[1].get<uint64_t>());
    return m;
  };
  EXPECT_EQ(most("framework_reserved"), 218 * kMiB);
  EXPECT_EQ(most("framework_allocated"), 150 * kMiB);
  EXPECT_EQ(most("nvml_process"), (218 + 300) * kMiB);
  EXPECT_EQ(most("driver_used"), (218 + 300 + 1024) * kMiB);
  for (const json& point : tl["views"]["nvml_process"]) EXPECT_LT(point[0], resident.size());

  // The views table at the peak is the report's, field for field.
  EXPECT_EQ(d["views_at_peak"], device(rep, 0)["views"]["at_peak"]);
  EXPECT_EQ(d["views_at_peak"]["context_overhead_bytes"], 300 * kMiB);

  // Phases: the model's statistics, and each run as a band.
  ASSERT_EQ(t["phases"].size(), rep["phases"].size());
  for (std::size_t i = 0; i < rep["phases"].size(); ++i) {
    for (const char* key : {"name", "device", "calls", "peak_bytes", "growth_bytes"})
      EXPECT_EQ(t["phases"][i][key], rep["phases"][i][key]) << i << " " << key;
  }
  std::map<std::string, int> runs;
  for (const json& r : t["phase_runs"]) {
    ++runs[r["name"].get<std::string>()];
    EXPECT_LE(r["start_ns"].get<uint64_t>(), r["end_ns"].get<uint64_t>());
    EXPECT_TRUE(r["ended"].get<bool>());
  }
  EXPECT_EQ(runs, kPhasesWorkloadRuns);
  EXPECT_EQ(t["phase_runs_left_out"], 0);

  // Leaks: the report's groups, in its order, adding up to what was live at the end.
  ASSERT_EQ(t["leaks"].size(), rep["leaks"].size());
  uint64_t leaked = 0;
  for (std::size_t i = 0; i < rep["leaks"].size(); ++i) {
    for (const char* key : {"bytes", "count", "class", "device", "resident_bytes"})
      EXPECT_EQ(t["leaks"][i][key], rep["leaks"][i][key]) << i << " " << key;
    EXPECT_EQ(t["leaks"][i]["library"], "workload_phases");
    leaked += t["leaks"][i]["bytes"].get<uint64_t>();
  }
  EXPECT_EQ(leaked, 70 * kMiB);
  std::vector<uint64_t> leak_bytes;
  for (const json& g : t["leaks"]) leak_bytes.push_back(g["bytes"]);
  EXPECT_EQ(leak_bytes, (std::vector<uint64_t>{64 * kMiB, 6 * kMiB}));

  // The largest sites at the peak, with stacks: 100 MiB of activations, 64 of weights, 50 of
  // gradients, then the 2 MiB kept by each of the first two steps (one site).
  std::vector<uint64_t> site_bytes;
  for (const json& s : d["peak_sites"]) {
    site_bytes.push_back(s["bytes"]);
    ASSERT_FALSE(frames(t, s).empty());
    EXPECT_EQ(s["library"], "workload_phases");
  }
  EXPECT_EQ(site_bytes, (std::vector<uint64_t>{100 * kMiB, 64 * kMiB, 50 * kMiB, 4 * kMiB}));
  bool in_main = false;
  for (const json& f : frames(t, d["peak_sites"][0])) in_main = in_main || f[0] == "main";
  EXPECT_TRUE(in_main) << d["peak_sites"][0].dump();

  // The flame graph: the device at the root with the peak's bytes; every node's children hold
  // no more than it does, and the root's children all of it (every allocation has a frame).
  const json& flame = d["flame"];
  ASSERT_FALSE(flame.empty());
  EXPECT_EQ(flame[0][0], -1);
  EXPECT_EQ(flame[0][1], 218 * kMiB);
  EXPECT_EQ(flame[0][2], "device 0");
  std::vector<uint64_t> children(flame.size(), 0);
  for (std::size_t i = 1; i < flame.size(); ++i) {
    const int parent = flame[i][0];
    ASSERT_GE(parent, 0);
    ASSERT_LT(static_cast<std::size_t>(parent), i);  // parents first
    children[parent] += flame[i][1].get<uint64_t>();
  }
  EXPECT_EQ(children[0], 218 * kMiB);
  for (std::size_t i = 0; i < flame.size(); ++i)
    EXPECT_LE(children[i], flame[i][1].get<uint64_t>());
  bool leaf_main = false;
  for (const json& node : flame) leaf_main = leaf_main || node[2] == "main";
  EXPECT_TRUE(leaf_main);
}

// A caching allocator that reports its blocks draws its allocated and reserved bytes as two
// series from its block events, with no figures reported by the program: five 4 MiB blocks in
// one 20 MiB segment (workload_cached_training fragment).
// Roles over time: every interval's roles add up to its total, one interval's are the peak's
// table, the activations come and go, and the module table is `peak`'s.
TEST_F(HtmlReport, TheTimelineStacksByRoleAndTheModulesAreThePeaks) {
  const ProcessResult run = run_traced("workload_roles_training", {});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  const json data = embedded_data(read_file(html({trace})));
  const json& d = data["traces"][0]["devices"][0];
  const json& tl = d["timeline"];
  const auto resident = tl["resident"].get<std::vector<uint64_t>>();
  std::map<std::string, std::vector<uint64_t>> roles;
  for (const json& layer : tl["roles"])
    roles[layer["name"]] = layer["bytes"].get<std::vector<uint64_t>>();
  const std::vector<std::string> names = {"parameter",  "gradient", "optimizer_state",
                                          "activation", "input",    "allocator_cache"};
  for (const std::string& name : names) EXPECT_EQ(roles.count(name), 1u) << name;
  for (std::size_t b = 0; b < resident.size(); ++b) {
    uint64_t sum = 0;
    for (const auto& [name, bytes] : roles) sum += bytes.at(b);
    ASSERT_EQ(sum, resident[b]) << "interval " << b;
  }
  // The peak's moment: the interval where the most blocks were handed out at the peak.
  const json peak = json::parse(cli({"peak", "--json", trace}).out)["devices"][0];
  std::map<std::string, uint64_t> at_peak;
  for (const json& r : peak["by_role"]) {
    if (r["bytes"].get<uint64_t>() > 0) at_peak[r["role"]] = r["bytes"];
  }
  // It lasts as long as nothing changes: the intervals it spans, from the peak's on.
  std::vector<std::size_t> equal;
  for (std::size_t b = 0; b < resident.size(); ++b) {
    std::map<std::string, uint64_t> split;
    for (const auto& [name, bytes] : roles) {
      if (bytes[b] > 0) split[name] = bytes[b];
    }
    if (split == at_peak) equal.push_back(b);
  }
  ASSERT_FALSE(equal.empty());
  EXPECT_GE(equal.front(),
            peak["peak_time_ns"].get<uint64_t>() / tl["resolution_ns"].get<uint64_t>());
  EXPECT_EQ(equal.back() - equal.front() + 1, equal.size());
  const std::vector<uint64_t>& activation = roles["activation"];
  EXPECT_EQ(*std::max_element(activation.begin(), activation.end()), 16 * kMiB);
  EXPECT_EQ(activation.back(), 0u);
  EXPECT_EQ(roles["parameter"].back(), 8 * kMiB);
  EXPECT_EQ(d["roles_at_peak"]["by_module"], peak["by_module"]);
  EXPECT_EQ(d["roles_at_peak"]["by_role"], peak["by_role"]);
}

TEST_F(HtmlReport, TheAllocatorsAllocatedAndReservedComeFromItsBlocks) {
  const ProcessResult run =
      run_traced("workload_cached_training", {"fragment"},
                 {{"FAKECUDA_DEVICE_MEMORY", "33554432"}, {"FAKECUDA_CONTEXT_OVERHEAD", "0"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json data = embedded_data(read_file(html({only_trace()})));
  const json& tl = data["traces"][0]["devices"][0]["timeline"];
  const auto series = [&tl](const char* view) {
    std::vector<uint64_t> values;
    for (const json& point : tl["views"][view]) values.push_back(point[1]);
    return values;
  };
  const std::vector<uint64_t> allocated = series("framework_allocated");
  const std::vector<uint64_t> reserved = series("framework_reserved");
  ASSERT_FALSE(allocated.empty()) << tl.dump();
  ASSERT_EQ(reserved.size(), allocated.size());
  EXPECT_EQ(*std::max_element(allocated.begin(), allocated.end()), 20 * kMiB);
  EXPECT_EQ(*std::max_element(reserved.begin(), reserved.end()), 20 * kMiB);
  for (std::size_t i = 0; i < allocated.size(); ++i) EXPECT_LE(allocated[i], reserved[i]);
}

// A bounded trace that dropped history: the page says from when it is complete and what was
// carried, as `info` does.
TEST_F(HtmlReport, ABoundedTraceSaysWhatHistoryItKept) {
  const ProcessResult run =
      run_traced("workload_cached_training", {"100000", "200"}, {{"GPUMEMTRACE_MAX_SIZE", "1MiB"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  const json data = embedded_data(read_file(html({trace})));
  const json& t = data["traces"][0];
  const ProcessResult info = cli({"info", trace, "--json"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const json history = json::parse(info.out)["history"];
  ASSERT_TRUE(history.is_object()) << info.out;
  EXPECT_GT(history["dropped_events"].get<uint64_t>(), 0u);
  EXPECT_EQ(t["history"], history);
  const std::string line = t["history_text"];
  EXPECT_EQ(line.rfind("history kept from ", 0), 0u) << line;
  const ProcessResult text = cli({"info", trace});
  EXPECT_NE(text.out.find(line), std::string::npos) << text.out;
}

TEST_F(HtmlReport, RunOfProcessesMarksTheHighestPeakAndShowsFailedAllocations) {
  // a 1, b 4, free a, c 2, a failed 64 GiB (6 MiB live: b and c), d 8, e 3, free b, free d,
  // f 5 (MiB): peak 17 MiB, 10 MiB never freed. The second process: 3 MiB, freed.
  ProcessResult r = run_traced("workload_runtime_shared",
                               {"alloc:a:" + mib(1), "alloc:b:" + mib(4), "free:a",
                                "alloc:c:" + mib(2), "oom:" + mib(64 * 1024), "alloc:d:" + mib(8),
                                "alloc:e:" + mib(3), "free:b", "free:d", "alloc:f:" + mib(5)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_traced("workload_runtime_shared", {"alloc:a:" + mib(3), "free:a"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json rep = report({dir_});
  const json data = embedded_data(read_file(html({dir_})));
  ASSERT_EQ(data["traces"].size(), 2u);

  const json& rows = data["processes"];
  ASSERT_EQ(rows.size(), 2u);
  std::map<uint64_t, uint64_t> peaks;  // pid -> peak
  for (const json& row : rows) {
    peaks[row["pid"]] = row["peak_bytes"];
    EXPECT_EQ(row["device"], 0);
    EXPECT_TRUE(row["rank"].is_null());
    const bool big = row["peak_bytes"] == 17 * kMiB;
    EXPECT_EQ(row["highest"], big);
    EXPECT_EQ(row["leaked_bytes"], big ? 10 * kMiB : 0);
    EXPECT_EQ(row["ooms"], big ? 1 : 0);
  }
  std::map<uint64_t, uint64_t> expected;
  for (const json& t : rep["traces"]) expected[t["pid"]] = 0;
  for (const json& dev : rep["devices"]) expected[dev["pid"]] = dev["peak_bytes"];
  EXPECT_EQ(peaks, expected);

  const json* failing = nullptr;
  for (const json& t : data["traces"]) {
    if (!t["ooms"].empty()) failing = &t;
  }
  ASSERT_NE(failing, nullptr);
  ASSERT_EQ((*failing)["ooms"].size(), 1u);
  const json& oom = (*failing)["ooms"][0];
  EXPECT_EQ(oom["requested_bytes"], 64 * 1024 * kMiB);
  EXPECT_EQ(oom["live_bytes"], 6 * kMiB);
  EXPECT_EQ(oom["device"], 0);
  EXPECT_FALSE(frames(*failing, oom).empty());
  // The workload makes every allocation at one call site: b and c are one holder.
  ASSERT_EQ(oom["holders"].size(), 1u);
  EXPECT_EQ(oom["holders"][0]["bytes"], 6 * kMiB);
  EXPECT_EQ(oom["holders"][0]["count"], 2);
  EXPECT_FALSE(frames(*failing, oom["holders"][0]).empty());
  const json& d = (*failing)["devices"][0];
  const auto resident = d["timeline"]["resident"].get<std::vector<uint64_t>>();
  EXPECT_EQ(*std::max_element(resident.begin(), resident.end()), 17 * kMiB);
}

}  // namespace
}  // namespace gmt::test
