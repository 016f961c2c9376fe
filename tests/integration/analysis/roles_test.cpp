// SPDX-License-Identifier: Apache-2.0
// Roles and modules end to end on the simulated stack: tests/workloads/roles_training.cpp plays
// what PyTorch's hooks report (scopes, tags) through the preload's entry points, behind a caching
// allocator reporting as PyTorch's tracker does; `report` and `peak` give each byte its role. The
// hooks' own Python (python/gpumemtrace_roles.py) runs against a stand-in of PyTorch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

class Roles : public TracedRun {
 protected:
  std::string traced_training() {
    const ProcessResult run = run_traced("workload_roles_training", {});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_NE(run.out.find("peak_allocated=" + std::to_string(46 * kMiB)), std::string::npos)
        << run.out;
    return only_trace();
  }
  json command_json(const std::vector<std::string>& args) const {
    const ProcessResult r = cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  }
  // The roles hooks' own Python against tests/workloads/roles_hooks_standin.py's PyTorch.
  ProcessResult run_hooks_standin(const std::vector<std::string>& extra) const {
    ProcessSpec spec;
    spec.argv = {"/usr/bin/env", "python3", workload("roles_hooks_standin.py"),
                 std::string(GMT_FAKECUDA_LIB_DIR) + "/libcudart.so.13",
                 workload("gpumemtrace_roles.py")};
    spec.argv.insert(spec.argv.end(), extra.begin(), extra.end());
    spec.set_env = base_env();
    spec.set_env["LD_PRELOAD"] = preload();
    spec.cwd = dir_;
    return run_process(spec);
  }
  using ModuleRoles = std::map<std::string, std::map<std::string, uint64_t>>;
  // A device's modules at its peak, each with its bytes by role.
  static ModuleRoles modules_at_peak(const json& device) {
    ModuleRoles modules;
    for (const json& m : device["by_module"]["at_peak"]) {
      modules[m["module"].get<std::string>()] = m["by_role"].get<std::map<std::string, uint64_t>>();
    }
    return modules;
  }
  // The stand-in's two layers at a peak in their step's backward: each its 4 MiB weight,
  // gradient and state; the first 8 MiB kept for backward, the second 8 and 8 recomputed.
  static ModuleRoles stand_in_layers_at_peak(const std::string& first, const std::string& second) {
    const std::map<std::string, uint64_t> tensors = {
        {"parameter", 4 * kMiB}, {"gradient", 4 * kMiB}, {"optimizer_state", 4 * kMiB}};
    ModuleRoles expected = {{first, tensors}, {second, tensors}};
    expected[first]["activation"] = 8 * kMiB;
    expected[second]["activation"] = 16 * kMiB;
    return expected;
  }
  static std::map<std::string, uint64_t> bytes_by_role(const json& roles,
                                                       const char* field = "bytes") {
    std::map<std::string, uint64_t> out;
    for (const json& r : roles) out[r["role"].get<std::string>()] = r[field].get<uint64_t>();
    return out;
  }
  // The roles that hold bytes, the allocator's cache left out.
  static std::map<std::string, uint64_t> nonzero_roles(const json& roles) {
    std::map<std::string, uint64_t> out;
    for (const auto& [role, bytes] : bytes_by_role(roles)) {
      if (bytes > 0 && role != "allocator_cache") out[role] = bytes;
    }
    return out;
  }
};

TEST_F(Roles, EveryByteAtThePeakAndAtExitHasItsRole) {
  const std::string trace = traced_training();
  const json report = command_json({"report", "--json", trace});
  const json& device = report["devices"][0];
  EXPECT_TRUE(device["roles_recorded"].get<bool>());
  const uint64_t peak = device["peak_bytes"].get<uint64_t>();
  const auto at_peak = bytes_by_role(device["by_role"]["at_peak"]);
  const uint64_t cache = peak - 46 * kMiB;
  const std::map<std::string, uint64_t> expected_peak = {{"parameter", 8 * kMiB},
                                                         {"buffer", 0},
                                                         {"gradient", 4 * kMiB},
                                                         {"optimizer_state", 16 * kMiB},
                                                         {"activation", 16 * kMiB},
                                                         {"temporary", 0},
                                                         {"input", 2 * kMiB},
                                                         {"allocator_cache", cache},
                                                         {"library", 0},
                                                         {"cuda_graph", 0},
                                                         {"kv_cache", 0},
                                                         {"state", 0},
                                                         {"output", 0},
                                                         {"unknown", 0}};
  EXPECT_EQ(at_peak, expected_peak);
  // The framework named the parameters, the gradient and the state; the rest is inferred.
  const auto tagged = bytes_by_role(device["by_role"]["at_peak"], "tagged_bytes");
  EXPECT_EQ(tagged.at("parameter"), 8 * kMiB);
  EXPECT_EQ(tagged.at("gradient"), 4 * kMiB);
  EXPECT_EQ(tagged.at("optimizer_state"), 16 * kMiB);
  EXPECT_EQ(tagged.at("activation"), 0u);
  for (const json& r : device["by_role"]["at_peak"]) {
    if (r["bytes"].get<uint64_t>() > 0) {
      EXPECT_FALSE(r["how"].get<std::string>().empty()) << r;
    }
  }
  const auto at_exit = bytes_by_role(device["by_role"]["at_exit"]);
  EXPECT_EQ(at_exit.at("parameter"), 8 * kMiB);
  EXPECT_EQ(at_exit.at("gradient"), 8 * kMiB);
  EXPECT_EQ(at_exit.at("optimizer_state"), 16 * kMiB);
  EXPECT_EQ(at_exit.at("activation"), 0u);
  EXPECT_EQ(at_exit.at("input"), 0u);
  // At the program's end, before its teardown freed the state: the segments are all still there.
  EXPECT_TRUE(device["by_role"]["at_exit_is_program_end"].get<bool>());
  uint64_t exit_total = 0;
  for (const auto& [role, bytes] : at_exit) exit_total += bytes;
  EXPECT_EQ(exit_total, device["live_at_exit_bytes"].get<uint64_t>());
  EXPECT_EQ(at_exit.at("allocator_cache"), exit_total - 32 * kMiB);
}

// Per module at the peak: what each layer's forward kept (what checkpointing it would save),
// its weight, its gradient and the optimizer's state for it.
TEST_F(Roles, ModulesAtThePeakByRole) {
  const std::string trace = traced_training();
  const json peak = command_json({"peak", "--json", trace});
  const json& modules = peak["devices"][0]["by_module"];
  ASSERT_EQ(modules.size(), 2u) << modules;
  EXPECT_EQ(modules[0]["module"], "fc2");
  EXPECT_EQ(modules[0]["bytes"].get<uint64_t>(), 24 * kMiB);
  EXPECT_EQ(modules[0]["by_role"], json({{"parameter", 4 * kMiB},
                                         {"gradient", 4 * kMiB},
                                         {"optimizer_state", 8 * kMiB},
                                         {"activation", 8 * kMiB}}));
  EXPECT_EQ(modules[1]["module"], "fc1");
  EXPECT_EQ(
      modules[1]["by_role"],
      json({{"parameter", 4 * kMiB}, {"optimizer_state", 8 * kMiB}, {"activation", 8 * kMiB}}));
}

// The peak leads with the roles, then the modules, then the sites.
TEST_F(Roles, ThePeakLeadsWithRolesThenModulesThenSites) {
  const std::string trace = traced_training();
  const ProcessResult peak = cli({"peak", trace});
  ASSERT_EQ(peak.exit_code, 0) << peak.err;
  const std::string& text = peak.out;
  const auto roles = text.find("  by role\n");
  const auto modules = text.find("  by module");
  const auto sites = text.find("  by site\n");
  ASSERT_NE(roles, std::string::npos) << text;
  ASSERT_NE(modules, std::string::npos) << text;
  ASSERT_NE(sites, std::string::npos) << text;
  EXPECT_LT(roles, modules);
  EXPECT_LT(modules, sites);
  EXPECT_NE(text.find("16.0 MiB  activation       inferred: made in a module's forward, released "
                      "by backward"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("24.0 MiB  fc2  (parameter 4.00 MiB, gradient 4.00 MiB, optimizer_state "
                      "8.00 MiB, activation 8.00 MiB)"),
            std::string::npos)
      << text;
}

// `leaks` names each block group's role: what the program kept at its end is its weights and its
// last gradients; the allocator's free cache is its cache.
TEST_F(Roles, LeaksNameEachGroupsRole) {
  const std::string trace = traced_training();
  const json leaks = command_json({"leaks", "--json", trace});
  std::map<std::string, uint64_t> by_role;
  for (const json& g : leaks["leaks"]) {
    ASSERT_TRUE(g.contains("role")) << g;
    by_role[g["role"].get<std::string>()] += g["bytes"].get<uint64_t>();
  }
  EXPECT_EQ(by_role.at("parameter"), 8 * kMiB);
  EXPECT_EQ(by_role.at("gradient"), 8 * kMiB);
  EXPECT_EQ(by_role.count("allocator_cache"), 1u);
  const ProcessResult text = cli({"leaks", trace});
  EXPECT_NE(text.out.find("role parameter"), std::string::npos) << text.out;
}

// A summary keeps the roles: `report` of the summary gives the trace's roles and modules, its
// peak sites' roles, and `jsonl` the same rows.
TEST_F(Roles, ASummaryKeepsTheRoles) {
  const std::string trace = traced_training();
  const std::string summary = dir_ + "/roles.summary.json";
  ASSERT_EQ(cli({"summarize", trace, "-o", summary}).exit_code, 0);
  const json from_trace = command_json({"report", "--json", trace});
  const json from_summary = command_json({"report", "--json", summary});
  const json& a = from_trace["devices"][0];
  const json& b = from_summary["devices"][0];
  EXPECT_TRUE(b["roles_recorded"].get<bool>());
  EXPECT_EQ(a["by_role"], b["by_role"]);
  EXPECT_EQ(a["by_module"], b["by_module"]);
  ASSERT_EQ(a["peak_sites"].size(), b["peak_sites"].size());
  for (std::size_t i = 0; i < a["peak_sites"].size(); ++i)
    EXPECT_EQ(a["peak_sites"][i]["roles"], b["peak_sites"][i]["roles"]) << i;
  const auto rows = [&](const std::string& input) {
    std::vector<json> out;
    std::istringstream lines(cli({"export", "--format", "jsonl", input, "-o", "-"}).out);
    for (std::string line; std::getline(lines, line);) {
      json row = json::parse(line);
      row.erase("path");
      out.push_back(std::move(row));
    }
    return out;
  };
  const std::vector<json> trace_rows = rows(trace);
  EXPECT_EQ(trace_rows.size(), 27u);
  // The peak's rows read apart: the two parameters made on one line (main's loop) are one row.
  std::set<std::string> peak_stacks;
  for (const json& row : trace_rows) {
    if (row["class"] == "peak") {
      EXPECT_TRUE(peak_stacks.insert(row["frames"].dump()).second) << row;
    }
  }
  EXPECT_EQ(peak_stacks.size(), 5u);
  EXPECT_EQ(trace_rows, rows(summary));
}

// `jsonl`: each site's role at the peak, each role's and each module's bytes at the peak (in the
// long form a query pivots), the roles at exit, and each leak group's role.
TEST_F(Roles, JsonlRowsCarryRolesAndModules) {
  const std::string trace = traced_training();
  const ProcessResult r = cli({"export", "--format", "jsonl", trace, "-o", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, uint64_t> peak_roles, exit_roles, site_roles, leak_roles;
  std::map<std::pair<std::string, std::string>, uint64_t> modules;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    const json row = json::parse(line);
    const std::string row_class = row["class"];
    if (row_class == "peak_role") {
      EXPECT_TRUE(row["site"].is_null()) << row;
      peak_roles[row["role"]] += row["bytes"].get<uint64_t>();
    } else if (row_class == "exit_role") {
      exit_roles[row["role"]] += row["bytes"].get<uint64_t>();
    } else if (row_class == "peak_module") {
      modules[{row["module"], row["role"]}] += row["bytes"].get<uint64_t>();
    } else if (row_class == "peak" || row_class == "peak_cache") {
      EXPECT_EQ(row["roles"], json({{row["role"].get<std::string>(), row["bytes"]}})) << row;
      site_roles[row["role"]] += row["bytes"].get<uint64_t>();
    } else {
      EXPECT_TRUE(row["module"].is_null()) << row;
      leak_roles[row["role"]] += row["bytes"].get<uint64_t>();
    }
  }
  const uint64_t cache = peak_roles.at("allocator_cache");
  const std::map<std::string, uint64_t> expected_peak = {
      {"parameter", 8 * kMiB},   {"gradient", 4 * kMiB}, {"optimizer_state", 16 * kMiB},
      {"activation", 16 * kMiB}, {"input", 2 * kMiB},    {"allocator_cache", cache}};
  EXPECT_EQ(peak_roles, expected_peak);
  EXPECT_EQ(site_roles, expected_peak);
  EXPECT_EQ(exit_roles.at("parameter"), 8 * kMiB);
  EXPECT_EQ(exit_roles.at("gradient"), 8 * kMiB);
  EXPECT_EQ(exit_roles.at("optimizer_state"), 16 * kMiB);
  const std::map<std::pair<std::string, std::string>, uint64_t> expected_modules = {
      {{"fc2", "parameter"}, 4 * kMiB},       {{"fc2", "gradient"}, 4 * kMiB},
      {{"fc2", "optimizer_state"}, 8 * kMiB}, {{"fc2", "activation"}, 8 * kMiB},
      {{"fc1", "parameter"}, 4 * kMiB},       {{"fc1", "optimizer_state"}, 8 * kMiB},
      {{"fc1", "activation"}, 8 * kMiB}};
  EXPECT_EQ(modules, expected_modules);
  EXPECT_EQ(leak_roles.at("parameter"), 8 * kMiB);
  EXPECT_EQ(leak_roles.at("gradient"), 8 * kMiB);
  EXPECT_EQ(leak_roles.count("allocator_cache"), 1u);
}

// Perfetto: a counter track per role, adding up to the resident track at every point.
TEST_F(Roles, PerfettoHasACounterTrackPerRole) {
  const std::string trace = traced_training();
  const std::string file = dir_ + "/roles.perfetto.json";
  const ProcessResult r = cli({"export", "--format", "perfetto", trace, "-o", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::map<double, uint64_t>> tracks;  // name -> ts -> bytes
  const json perfetto = json::parse(read_file(file));
  for (const json& e : perfetto["traceEvents"]) {
    if (e["ph"] == "C") tracks[e["name"]][e["ts"].get<double>()] = e["args"]["bytes"];
  }
  const std::string prefix = "device 0 role ";
  std::vector<std::string> roles;
  for (const auto& [name, points] : tracks) {
    if (name.rfind(prefix, 0) == 0) roles.push_back(name.substr(prefix.size()));
  }
  EXPECT_EQ(roles, (std::vector<std::string>{"activation", "allocator_cache", "gradient", "input",
                                             "optimizer_state", "parameter", "temporary"}));
  // A track's value at `ts`: its last point at or before it (points are written on change).
  const auto at = [&](const std::string& name, double ts) -> uint64_t {
    const auto& points = tracks[name];
    auto it = points.upper_bound(ts);
    return it == points.begin() ? 0 : std::prev(it)->second;
  };
  const auto& resident = tracks.at("device 0 resident");
  ASSERT_GT(resident.size(), 1u);
  std::set<double> times;
  for (const auto& [name, points] : tracks) {
    for (const auto& [ts, bytes] : points) times.insert(ts);
  }
  for (const double ts : times) {
    uint64_t sum = 0;
    for (const std::string& role : roles) sum += at(prefix + role, ts);
    ASSERT_EQ(sum, at("device 0 resident", ts)) << ts;
  }
  uint64_t most_activation = 0;
  for (const auto& [ts, bytes] : tracks.at(prefix + "activation"))
    most_activation = std::max(most_activation, bytes);
  EXPECT_EQ(most_activation, 16 * kMiB);
  EXPECT_EQ(tracks.at(prefix + "parameter").rbegin()->second, 8 * kMiB);
}

// `diff` by role: the same step with each layer keeping twice as much for backward moves the
// activations at the peak, and what is the parameters' or the optimizer's does not move.
TEST_F(Roles, DiffTellsWhichRoleMoved) {
  ASSERT_EQ(run_traced("workload_roles_training", {}).exit_code, 0);
  const std::string before = only_trace();
  ASSERT_EQ(run_traced("workload_roles_training", {"2"}).exit_code, 0);
  std::string after;
  for (const std::string& t : traces()) {
    if (t != before) after = t;
  }
  ASSERT_FALSE(after.empty());
  const json diff = command_json({"diff", "--json", before, after});
  std::map<std::string, int64_t> change;
  for (const json& r : diff["devices"][0]["by_role"])
    change[r["role"].get<std::string>()] = r["peak_change"].get<int64_t>();
  EXPECT_EQ(change.at("activation"), static_cast<int64_t>(16 * kMiB));
  EXPECT_EQ(change.at("parameter"), 0);
  EXPECT_EQ(change.at("optimizer_state"), 0);
  const ProcessResult text = cli({"diff", before, after});
  EXPECT_NE(text.out.find("    activation 16.0 MiB -> 32.0 MiB (+16.0 MiB)\n"), std::string::npos)
      << text.out;
}

// `check --max-role` gates a role at the peak: activations are 16 MiB there.
TEST_F(Roles, CheckGatesARoleAtThePeak) {
  const std::string trace = traced_training();
  const ProcessResult within = cli({"check", "--max-role", "activation=16MiB", trace});
  EXPECT_EQ(within.exit_code, 0) << within.out << within.err;
  const ProcessResult over =
      cli({"check", "--max-role", "input=2MiB", "--max-role", "activation=15MiB", trace});
  EXPECT_EQ(over.exit_code, 1);
  EXPECT_EQ(over.out,
            "FAIL: activation 16.0 MiB (16777216 bytes) at the peak on device 0 exceeds "
            "--max-role activation=15.0 MiB\n");
  const ProcessResult unknown = cli({"check", "--max-role", "weights=1GiB", trace});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("expected ROLE=SIZE"), std::string::npos) << unknown.err;
}

// A trace without roles (no hooks: a program without PyTorch) is said to have none, never
// passed as if its roles were within their limits.
TEST_F(Roles, CheckSaysATraceWithoutRolesHasNone) {
  const ProcessResult run = run_traced("workload_runtime_shared", {"alloc:a:1048576", "free:a"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  const ProcessResult check = cli({"check", "--max-role", "activation=1MiB", trace});
  EXPECT_EQ(check.exit_code, 0);
  EXPECT_NE(check.out.find("has no roles (no PyTorch roles hooks recorded): --max-role gates "
                           "nothing there\n"),
            std::string::npos)
      << check.out;
}

// The hooks themselves (python/gpumemtrace_roles.py) against a stand-in of PyTorch
// (tests/workloads/roles_hooks_standin.py): five steps of fc1 and fc2, whose backward recomputes
// fc2 on its engine thread as activation checkpointing does; the peak is in the last, a forward
// the hooks report in outline. Every role and module at the peak
// and at exit is the one the stand-in's sizes give; fc2 keeps its parameter, gradient and state
// although it was also called as a root of its own, and the loss stays a temporary.
TEST_F(Roles, TheHooksAgainstAStandInOfPyTorchGiveEachBlockItsRoleAndModule) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  const ProcessResult run = run_hooks_standin({});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "modules=fc1,fc2\n");
  const json report = command_json({"report", "--json", only_trace()});
  const json& device = report["devices"][0];
  EXPECT_TRUE(device["roles_recorded"].get<bool>());
  const uint64_t cache = device["peak_bytes"].get<uint64_t>() - 52 * kMiB;
  const std::map<std::string, uint64_t> expected_peak = {{"parameter", 8 * kMiB},
                                                         {"buffer", 0},
                                                         {"gradient", 8 * kMiB},
                                                         {"optimizer_state", 8 * kMiB},
                                                         {"activation", 24 * kMiB},
                                                         {"temporary", 1 * kMiB},
                                                         {"input", 3 * kMiB},
                                                         {"allocator_cache", cache},
                                                         {"library", 0},
                                                         {"cuda_graph", 0},
                                                         {"kv_cache", 0},
                                                         {"state", 0},
                                                         {"output", 0},
                                                         {"unknown", 0}};
  EXPECT_EQ(bytes_by_role(device["by_role"]["at_peak"]), expected_peak);
  const auto tagged = bytes_by_role(device["by_role"]["at_peak"], "tagged_bytes");
  EXPECT_EQ(tagged.at("parameter"), 8 * kMiB);
  EXPECT_EQ(tagged.at("gradient"), 8 * kMiB);
  EXPECT_EQ(tagged.at("optimizer_state"), 8 * kMiB);
  EXPECT_TRUE(device["by_role"]["at_exit_is_program_end"].get<bool>());
  const auto at_exit = bytes_by_role(device["by_role"]["at_exit"]);
  EXPECT_EQ(at_exit.at("parameter"), 8 * kMiB);
  EXPECT_EQ(at_exit.at("gradient"), 8 * kMiB);
  EXPECT_EQ(at_exit.at("optimizer_state"), 8 * kMiB);
  EXPECT_EQ(at_exit.at("activation") + at_exit.at("input") + at_exit.at("temporary") +
                at_exit.at("unknown"),
            0u);
  EXPECT_EQ(modules_at_peak(device), stand_in_layers_at_peak("fc1", "fc2"));
}

// The hooks hold no tensor of a model the program lets go of: after training, the stand-in
// deletes its model and optimizer (no reference to its parameters is left), then trains another
// model (enc, dec) for two steps, the second of which holds the run's most. At its end, only the
// second model's parameters, gradients and state are live, and its modules are the peak's. Before,
// each root the hooks had seen kept its parameters, and with them their gradients: 16 MiB more
// here, a real model's whole weights and gradients for a program that trains several in turn.
TEST_F(Roles, TheHooksKeepNothingOfAModelTheProgramLetsGo) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  const ProcessResult run = run_hooks_standin({"delete"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "modules=fc1,fc2\nparameters_alive=0\nmodules=enc,dec\n");
  const json report = command_json({"report", "--json", only_trace()});
  const json& device = report["devices"][0];
  EXPECT_TRUE(device["by_role"]["at_exit_is_program_end"].get<bool>());
  const uint64_t segment = 512 * kMiB;
  EXPECT_EQ(device["live_at_exit_bytes"].get<uint64_t>(), segment);
  const std::map<std::string, uint64_t> expected = {{"parameter", 8 * kMiB},
                                                    {"buffer", 0},
                                                    {"gradient", 8 * kMiB},
                                                    {"optimizer_state", 8 * kMiB},
                                                    {"activation", 0},
                                                    {"temporary", 0},
                                                    {"input", 0},
                                                    {"allocator_cache", segment - 24 * kMiB},
                                                    {"library", 0},
                                                    {"cuda_graph", 0},
                                                    {"kv_cache", 0},
                                                    {"state", 0},
                                                    {"output", 0},
                                                    {"unknown", 0}};
  EXPECT_EQ(bytes_by_role(device["by_role"]["at_exit"]), expected);
  EXPECT_EQ(modules_at_peak(device), stand_in_layers_at_peak("enc", "dec"));
}

// The hooks wrap torch.cuda.graph's capture: the forward captured after training keeps its
// outputs (fc1's and fc2's 8 MiB) in the graph's pool, cuda_graph at the program's end; the
// static input made before the capture is an input.
TEST_F(Roles, TheHooksWrapACudaGraphsCapture) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  const ProcessResult run = run_hooks_standin({"graph"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json report = command_json({"report", "--json", only_trace()});
  const json& device = report["devices"][0];
  const auto at_exit = bytes_by_role(device["by_role"]["at_exit"]);
  const uint64_t live = device["live_at_exit_bytes"].get<uint64_t>();
  const std::map<std::string, uint64_t> expected = {
      {"parameter", 8 * kMiB}, {"buffer", 0},
      {"gradient", 8 * kMiB},  {"optimizer_state", 8 * kMiB},
      {"activation", 0},       {"temporary", 0},
      {"input", 2 * kMiB},     {"allocator_cache", live - 42 * kMiB},
      {"library", 0},          {"cuda_graph", 16 * kMiB},
      {"kv_cache", 0},         {"state", 0},
      {"output", 0},           {"unknown", 0}};
  EXPECT_EQ(at_exit, expected);
}

// The same capture given a private pool of its own, as PyTorch gives each: a 32 MiB segment
// taken at its first allocation, the outputs' 16 MiB in it. What is free in that segment serves
// only the graph's replays (CUDA graph trees free a capture's tensors and replay into the same
// memory): it is the graph's too, 32 MiB, not the allocator's cache.
TEST_F(Roles, AGraphsPrivatePoolIsTheGraphs) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  const ProcessResult run = run_hooks_standin({"graph-pool"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json report = command_json({"report", "--json", only_trace()});
  const json& device = report["devices"][0];
  const auto at_exit = bytes_by_role(device["by_role"]["at_exit"]);
  const uint64_t live = device["live_at_exit_bytes"].get<uint64_t>();
  EXPECT_EQ(at_exit.at("cuda_graph"), 32 * kMiB);
  EXPECT_EQ(at_exit.at("allocator_cache"), live - 58 * kMiB);
  EXPECT_EQ(at_exit.at("unknown"), 0u);
  const ProcessResult text = cli({"report", only_trace()});
  EXPECT_NE(text.out.find("free in the pytorch allocator's CUDA graph pools (1 segment)"),
            std::string::npos)
      << text.out;
}

// CUDA graph trees warm a graph up in the graphs' pool, outside any capture: the 32 MiB segment
// the warm-up took, all free at the end, is the graph's. A user's memory pool goes through the
// same torch._C calls, from its own code: its 16 MiB segment is the allocator's cache, and one
// begun and ended inside the warm-up ends none of it.
TEST_F(Roles, AGraphTreesWarmUpSegmentIsTheGraphs) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  const ProcessResult run = run_hooks_standin({"graph-warmup"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // The program's calls reached the bindings, the hooks' wrappers in between.
  EXPECT_NE(run.out.find("pool_calls=[('begin', (0, 1)), ('begin', (2, 0)), ('end', (2, 0)), "
                         "('end', (0, 1)), ('begin', (1, 0)), ('end', (1, 0))]"),
            std::string::npos)
      << run.out;
  const json report = command_json({"report", "--json", only_trace()});
  const json& device = report["devices"][0];
  const auto at_exit = bytes_by_role(device["by_role"]["at_exit"]);
  const uint64_t live = device["live_at_exit_bytes"].get<uint64_t>();
  EXPECT_EQ(at_exit.at("cuda_graph"), 32 * kMiB);
  // Parameters, gradients, state (8 MiB each) and the static input (2 MiB); the rest of the
  // first segment and all of the user's pool are the cache.
  EXPECT_EQ(at_exit.at("input"), 2 * kMiB);
  EXPECT_EQ(at_exit.at("allocator_cache"), live - 58 * kMiB);
  EXPECT_EQ(at_exit.at("unknown"), 0u);
}

// An OOM in a forward, the most common kind: the stand-in's first forward fails in fc2, after fc1
// kept 8 MiB. At the failure that forward is still running: what it made is an activation (a
// temporary under no_grad), with its module, and nothing is unknown; `how` says so.
void expect_failure_roles(const json& failure, const std::string& running_role) {
  const auto bytes = [&](const char* field) {
    std::map<std::string, uint64_t> out;
    for (const json& r : failure["by_role"]) {
      if (r["bytes"].get<uint64_t>() > 0) out[r["role"].get<std::string>()] = r[field];
    }
    return out;
  };
  const uint64_t live = failure["live_bytes"].get<uint64_t>();
  const std::map<std::string, uint64_t> expected = {{"parameter", 8 * kMiB},
                                                    {running_role, 8 * kMiB},
                                                    {"input", 2 * kMiB},
                                                    {"allocator_cache", live - 18 * kMiB}};
  EXPECT_EQ(bytes("bytes"), expected);
  std::map<std::string, uint64_t> running = bytes("running_bytes");
  std::erase_if(running, [](const auto& r) { return r.second == 0; });
  EXPECT_EQ(running, (std::map<std::string, uint64_t>{{running_role, 8 * kMiB}}));
  for (const json& r : failure["by_role"]) {
    if (r["role"] != running_role) continue;
    const std::string how = r["how"];
    EXPECT_EQ(how.rfind("inferred: made in the forward that was running then", 0), 0u) << how;
  }
  ASSERT_FALSE(failure["by_module"].empty()) << failure;
  const json& fc1 = *std::find_if(failure["by_module"].begin(), failure["by_module"].end(),
                                  [](const json& m) { return m["module"] == "fc1"; });
  EXPECT_EQ(fc1["by_role"][running_role], 8 * kMiB) << fc1;
}

TEST_F(Roles, AtAnOomInAForwardItsBlocksAreActivations) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  const ProcessResult run = run_hooks_standin({"oom"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "failed: CUDA out of memory (cudaMalloc: 2)\nmodules=fc1,fc2\n");
  const json oom = command_json({"oom", "--json", only_trace()});
  ASSERT_EQ(oom["ooms"].size(), 1u) << oom;
  EXPECT_EQ(oom["ooms"][0]["requested_bytes"], 64 * 1024 * kMiB);
  expect_failure_roles(oom["ooms"][0], "activation");
  const ProcessResult text = cli({"oom", only_trace()});
  EXPECT_NE(text.out.find("8.00 MiB  activation       inferred: made in the forward that was "
                          "running then, autograd recording"),
            std::string::npos)
      << text.out;
  // The headline names what the program called, as its stack shows it: the trace caught only
  // the driver call of the libcudart the program opened with ctypes.
  EXPECT_EQ(oom["ooms"][0]["api"], "cuMemAlloc");
  EXPECT_NE(text.out.find(": cudaMalloc of 64.0 GiB (device, CUDA_ERROR_OUT_OF_MEMORY)"),
            std::string::npos)
      << text.out;
}

// The same decoder with a cache preallocated for 2048 tokens, as transformers' StaticCache is:
// its keys and values are their full length from the first forward, and how full it is comes
// from what the forwards wrote (generate()'s cache_position: 1024, then 1 a step), not from the
// device: 1027 of 2048 tokens, 1021 more fit in it. Each layer also keeps the count of tokens it
// wrote on the device (StaticLayer's cumulative_length, 8 bytes in a 512-byte block): the
// cache's too.
TEST_F(Roles, APreallocatedCacheSaysHowFullItIs) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  const ProcessResult run = run_hooks_standin({"decode-static"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json report = command_json({"report", "--json", only_trace()});
  const json& device = report["devices"][0];
  const uint64_t layer = 2 * 2 * 2048 * 64 * 2;  // one layer's keys (or values), preallocated
  EXPECT_EQ(nonzero_roles(device["by_role"]["at_exit"]),
            (std::map<std::string, uint64_t>{{"parameter", 8 * kMiB},
                                             {"input", 1 * kMiB},
                                             {"output", 1 * kMiB},
                                             {"kv_cache", 4 * layer + 2 * 512}}));
  const json& inference = device["inference"];
  EXPECT_EQ(inference["kv_cache_bytes"], 4 * layer + 2 * 512) << inference;
  EXPECT_EQ(inference["tokens"], 1027);
  EXPECT_EQ(inference["capacity"], 2048);
  EXPECT_EQ(inference["tokens_that_fit"], 1021);
  EXPECT_EQ(inference["sequences_that_fit"], nullptr);
  const ProcessResult text = cli({"report", only_trace()});
  EXPECT_NE(text.out.find("preallocated for 2048 tokens per sequence, 1027 of them written (50 % "
                          "full): 1021 more tokens per sequence fit in it"),
            std::string::npos)
      << text.out;
}

// The same where torch.compile was asked for first, as generate() does for a static cache (its
// decode step compiled: those forwards run past the hooks, uncounted): how full it is goes
// unsaid rather than wrong.
TEST_F(Roles, APreallocatedCacheOfACompiledModelSaysItsFullnessIsNotKnown) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  const ProcessResult run = run_hooks_standin({"decode-static-compiled"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json report = command_json({"report", "--json", only_trace()});
  const json& inference = report["devices"][0]["inference"];
  EXPECT_EQ(inference["kv_cache_bytes"], 4 * (2 * 2 * 2048 * 64 * 2) + 2 * 512) << inference;
  EXPECT_EQ(inference["tokens"], nullptr);
  EXPECT_EQ(inference["capacity"], 2048);
  EXPECT_EQ(inference["tokens_that_fit"], nullptr);
  const ProcessResult text = cli({"report", only_trace()});
  EXPECT_NE(text.out.find("preallocated for 2048 tokens per sequence (how full it is, the hooks "
                          "could not count: torch.compile was asked for"),
            std::string::npos)
      << text.out;
}

// Inference: the stand-in's decoder under no_grad, a prompt of 1024 tokens then 3 more, with a
// transformers-like DynamicCache (`decode`) or with each attention module keeping its keys
// itself (`decode-kept`). At the program's end: the weights (8 MiB), the prompt's ids (1 MiB, an
// input), the last step's logits (1 MiB, an output the program kept) and the cache: 2 layers'
// keys and values of 2 sequences x 2 heads x 1027 tokens x 64 x 2 bytes, tagged as the key-value
// cache by layer module; kept by the modules themselves, their keys are their state.
TEST_F(Roles, ADecodersCacheIsItsKvCacheByLayer) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  const ProcessResult run = run_hooks_standin({"decode"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json report = command_json({"report", "--json", only_trace()});
  const json& device = report["devices"][0];
  const uint64_t layer = 2 * 2 * 1027 * 64 * 2;  // one layer's keys (or values)
  EXPECT_EQ(nonzero_roles(device["by_role"]["at_exit"]),
            (std::map<std::string, uint64_t>{{"parameter", 8 * kMiB},
                                             {"input", 1 * kMiB},
                                             {"output", 1 * kMiB},
                                             {"kv_cache", 4 * layer}}));
  std::map<std::string, uint64_t> kv_by_module;
  for (const json& m : device["by_module"]["at_exit"]) {
    if (m["by_role"].contains("kv_cache")) kv_by_module[m["module"]] = m["by_role"]["kv_cache"];
  }
  EXPECT_EQ(kv_by_module, (std::map<std::string, uint64_t>{{"l0", 2 * layer}, {"l1", 2 * layer}}));
  const json& inference = device["inference"];
  EXPECT_EQ(inference["kv_cache_bytes"], 4 * layer) << inference;
  EXPECT_EQ(inference["batch"], 2);
  EXPECT_EQ(inference["tokens"], 1027);
  EXPECT_EQ(inference["bytes_per_token"], 2 * 2 * 2 * 64 * 2);  // per sequence
  // The last step's working memory: above what was live when it began, its attention's 1 MiB
  // scratch is freed before each layer's keys and values grow by a token (512 bytes each, the old
  // freed once the new is made: one of them at its full length at most), then its logits are
  // made: 1 MiB and the 2 layers' growth, 2 x 2 x 512.
  EXPECT_EQ(inference["step_bytes"], 1 * kMiB + 2048) << inference;
  // The estimate from the free bytes: n tokens take n x 2 sequences x 1 KiB, and the step
  // writing the last needs its working memory grown with the length: n x 2048 + step x (1027 +
  // n) / 1027 <= available.
  ASSERT_TRUE(inference["device_free_bytes"].is_number()) << inference;
  const double available = inference["device_free_bytes"].get<double>() +
                           inference["allocator_cache_bytes"].get<double>();
  const double step = 1 * kMiB + 2048;
  EXPECT_EQ(inference["estimated_tokens_that_fit"],
            static_cast<uint64_t>((available - step) / (2 * 1024 + step / 1027)))
      << inference;
  // The allocator's model runs the last step forward (7 requests a step: the scratch and the
  // keys and values of each layer, the logits) on the 16 GiB device and stops at its bound
  // without a failure: at least 5,000,000 / 7 steps fit, a token each.
  EXPECT_EQ(inference["tokens_that_fit_by"], "allocator_model");
  EXPECT_EQ(inference["modelled"]["steps"], 3);
  EXPECT_EQ(inference["modelled"]["requests_per_step"], 7);
  EXPECT_EQ(inference["modelled"]["failed_request_bytes"], nullptr);
  EXPECT_EQ(inference["tokens_that_fit"], 5'000'000 / 7) << inference;
  // The hooks' wrapper of Module.__call__ stands between every module call and its caller, and
  // shows in no stack: every frame shown, the stand-in's own are there, the hooks' are not.
  const ProcessResult peak = cli({"peak", "--frames", "all", only_trace()});
  EXPECT_NE(peak.out.find("roles_hooks_standin.py"), std::string::npos) << peak.out;
  EXPECT_EQ(peak.out.find("gpumemtrace_roles"), std::string::npos) << peak.out;
  const ProcessResult text = cli({"report", only_trace()});
  EXPECT_NE(
      text.out.find("inference at exit: key-value cache 2.01 MiB, 2 sequences of 1027 tokens, "
                    "1.00 KiB per token per sequence"),
      std::string::npos)
      << text.out;
}

TEST_F(Roles, ADecoderKeepingItsOwnKeysHasThemAsStateByModule) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  const ProcessResult run = run_hooks_standin({"decode-kept"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json report = command_json({"report", "--json", only_trace()});
  const json& device = report["devices"][0];
  const uint64_t layer = 2 * 2 * 1027 * 64 * 2;
  EXPECT_EQ(nonzero_roles(device["by_role"]["at_exit"]),
            (std::map<std::string, uint64_t>{{"parameter", 8 * kMiB},
                                             {"input", 1 * kMiB},
                                             {"output", 1 * kMiB},
                                             {"state", 2 * layer}}));
  std::map<std::string, uint64_t> state_by_module;
  for (const json& m : device["by_module"]["at_exit"]) {
    if (m["by_role"].contains("state")) state_by_module[m["module"]] = m["by_role"]["state"];
  }
  EXPECT_EQ(state_by_module, (std::map<std::string, uint64_t>{{"l0", layer}, {"l1", layer}}));
  EXPECT_FALSE(device.contains("inference")) << device["inference"];
}

TEST_F(Roles, AtAnOomInANoGradForwardItsBlocksAreTemporaries) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  const ProcessResult run = run_hooks_standin({"oom-no-grad"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json oom = command_json({"oom", "--json", only_trace()});
  ASSERT_EQ(oom["ooms"].size(), 1u) << oom;
  expect_failure_roles(oom["ooms"][0], "temporary");
}

}  // namespace
}  // namespace gmt::test
