// SPDX-License-Identifier: Apache-2.0
// Call stacks end to end: recorded in the traced process (native through libunwind, Python
// through the interpreter's C API), symbolized offline, reported as the peak's top sites.
#include <unistd.h>
#include <algorithm>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/traced_run_fixture.h"

namespace gmt::test {
namespace {

using nlohmann::json;

class Stacks : public TracedRun {
 protected:
  // The frames of the peak site of `bytes` on device 0.
  static json site_frames(const json& report, uint64_t bytes) {
    for (const json& site : device(report, 0)["peak_sites"]) {
      if (site["bytes"] == bytes) return site["frames"];
    }
    ADD_FAILURE() << "no peak site of " << bytes << " bytes in " << device(report, 0).dump();
    return json::array();
  }

  // Whether `frames` holds a frame of `function` at `file_suffix`:`line` of `kind`.
  static bool has_frame(const json& frames, const std::string& function,
                        const std::string& file_suffix, int64_t line, const std::string& kind) {
    for (const json& f : frames) {
      if (f["function"] != function || f["kind"] != kind || !f["file"].is_string() ||
          f["line"] != line)
        continue;
      const std::string file = f["file"];
      if (file.size() >= file_suffix.size() &&
          file.compare(file.size() - file_suffix.size(), file_suffix.size(), file_suffix) == 0) {
        return true;
      }
    }
    return false;
  }
};

TEST_F(Stacks, NativeSitesNameTheAllocatingFunctionsWithFileAndLine) {
  const json rep = traced_report("workload_stack_sites", {});
  const int64_t weights_line = printed(last_output_, "weights_line");
  const int64_t activations_line = printed(last_output_, "activations_line");
  // At the peak: the weights (96 MiB) and the three layers' activations (8 + 16 + 24 MiB).
  EXPECT_EQ(device(rep, 0)["peak_bytes"], 144 * kMiB);
  const json weights = site_frames(rep, 96 * kMiB);
  EXPECT_TRUE(
      has_frame(weights, "sites::allocate_weights()", "stack_sites.cpp", weights_line, "native"))
      << weights.dump(1);
  const json activations = site_frames(rep, 48 * kMiB);
  EXPECT_TRUE(has_frame(activations, "sites::allocate_activations(int)", "stack_sites.cpp",
                        activations_line, "native"))
      << activations.dump(1);
  EXPECT_EQ(device(rep, 0)["peak_sites"].size(), 2u);
  // Leaf first: the runtime's cudaMalloc, then our function.
  ASSERT_FALSE(weights.empty());
  EXPECT_EQ(weights[0]["function"], "cudaMalloc");
}

TEST_F(Stacks, AllocationsOfAnUnloadedLibraryAreStillNamed) {
  const std::string plugin = std::string(GMT_WORKLOAD_DIR) + "/libgmt_plugin_allocator.so";
  const json rep = traced_report("workload_dlopen_plugin", {plugin});
  const int64_t line = printed(last_output_, "plugin_line");
  EXPECT_EQ(device(rep, 0)["peak_bytes"], 64 * kMiB);
  // Loaded twice, maybe at two places: each allocation is named from the modules of its time.
  for (uint64_t bytes : {48 * kMiB, 16 * kMiB}) {
    const json frames = site_frames(rep, bytes);
    EXPECT_TRUE(has_frame(frames, "plugin_allocate", "plugin_allocator.cpp", line, "native"))
        << frames.dump(1);
  }
  EXPECT_FALSE(rep["traces"][0].contains("symbolization_warnings")) << rep["traces"][0].dump();
}

TEST_F(Stacks, WithoutStacksTheSitesHaveNoFrames) {
  const json rep = traced_report("workload_stack_sites", {}, {{"GPUMEMTRACE_STACKS", "none"}});
  ASSERT_EQ(device(rep, 0)["peak_sites"].size(), 1u);  // everything in one stackless site
  EXPECT_EQ(device(rep, 0)["peak_sites"][0]["bytes"], 144 * kMiB);
  EXPECT_EQ(device(rep, 0)["peak_sites"][0]["count"], 4);
  EXPECT_TRUE(device(rep, 0)["peak_sites"][0]["frames"].empty());
}

// Our walker and libunwind alone (GPUMEMTRACE_UNWIND=libunwind) record the same native stacks,
// frame for frame; each frame as its module and offset, since the two runs load at other
// addresses. The walker's note: each stack walked in full once, at its first allocation, and
// remembered after; none left to libunwind.
TEST_F(Stacks, TheWalkerRecordsTheStacksLibunwindRecords) {
  std::set<std::vector<std::string>> stacks[2];
  long long remembered[2] = {0, 0}, by_libunwind[2] = {0, 0}, taken[2] = {0, 0};
  for (int run = 0; run < 2; ++run) {
    std::map<std::string, std::string> env = {{"GPUMEMTRACE_SELF_TIME", "1"}};
    if (run == 1) env["GPUMEMTRACE_UNWIND"] = "libunwind";
    const ProcessResult traced = run_traced("workload_cached_training", {"20"}, env);
    ASSERT_EQ(traced.exit_code, 0) << traced.err;
    const std::string trace = only_trace();
    const ProcessResult dump = cli({"dump", trace});
    ASSERT_EQ(dump.exit_code, 0) << dump.err;
    std::vector<json> modules;
    std::istringstream lines(dump.out);
    for (std::string line; std::getline(lines, line);) {
      const json r = json::parse(line);
      if (r["record"] == "module") modules.push_back(r);
      if (r["record"] == "note" && r["text"].get<std::string>().starts_with("recorder cost")) {
        long long ignored = 0;
        ASSERT_EQ(std::sscanf(r["text"].get<std::string>().c_str(),
                              "recorder cost: %lld events, %lld ns in the recorder, %lld ns of it "
                              "taking %lld stacks (%lld ns of those reading Python frames, %lld "
                              "native frames, %lld native stacks remembered, %lld by libunwind)",
                              &ignored, &ignored, &ignored, &taken[run], &ignored, &ignored,
                              &remembered[run], &by_libunwind[run]),
                  8)
            << r["text"];
      }
      if (r["record"] != "stack") continue;
      std::vector<std::string> frames;
      for (const json& address : r["frames"]) {
        const uint64_t a = address;
        std::string where = "?";
        for (const json& m : modules) {
          if (a >= m["start"].get<uint64_t>() && a < m["end"].get<uint64_t>()) {
            where = m["path"].get<std::string>() + "+" +
                    std::to_string(a - m["load_base"].get<uint64_t>());
          }
        }
        frames.push_back(where);
      }
      stacks[run].insert(frames);
    }
    std::filesystem::remove(trace);
  }
  EXPECT_GE(stacks[0].size(), 5u);
  EXPECT_EQ(stacks[0], stacks[1]);
  ASSERT_GT(taken[0], 0);
  EXPECT_EQ(taken[0], taken[1]);
  EXPECT_EQ(by_libunwind[0], 0);
  EXPECT_EQ(taken[0] - remembered[0], static_cast<long long>(stacks[0].size()));
  EXPECT_EQ(remembered[1], 0);
  EXPECT_EQ(by_libunwind[1], taken[1]);
}

// The default, `all`, is native frames here (the workload runs no Python).
TEST_F(Stacks, AnInvalidStackSettingWarnsOnceAndUsesTheDefault) {
  const ProcessResult r =
      run_traced("workload_stack_sites", {}, {{"GPUMEMTRACE_STACKS", "everything"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string warning =
      "gpumemtrace: GPUMEMTRACE_STACKS='everything' is not one of none, native, python, all; using "
      "all";
  const auto first = r.err.find(warning);
  ASSERT_NE(first, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(warning, first + 1), std::string::npos) << r.err;
  const json rep = report({only_trace()});
  EXPECT_EQ(device(rep, 0)["peak_sites"].size(), 2u);
}

// PyDLL keeps the GIL during the call; CDLL releases it, as PyTorch does around its operators.
// Either way the frames are read in place on Python 3.11 and 3.12; "PyDLL-api" reads them through
// the C API instead (GPUMEMTRACE_TEST_PYTHON_API), as on other Pythons.
class PythonStacks : public Stacks, public ::testing::WithParamInterface<std::string> {
 protected:
  // Runs python_allocations.py traced with Python stacks, its loader (and frame path) the
  // parameter's, with `extra` arguments after it.
  ProcessResult run_allocations(const std::vector<std::string>& extra = {},
                                const std::string& stacks = "python") {
    return run_script("python_allocations.py", extra, stacks);
  }
  // The trace's Python code objects and stacks by id, and its allocations, from `dump`.
  struct Dumped {
    bool ok = false;
    std::map<uint64_t, json> codes;
    std::map<uint64_t, json> stacks;
    std::vector<json> allocs;
  };
  Dumped dump_only_trace() const {
    Dumped dumped;
    const ProcessResult dump = cli({"dump", only_trace()});
    EXPECT_EQ(dump.exit_code, 0) << dump.err;
    dumped.ok = dump.exit_code == 0;
    std::istringstream lines(dump.out);
    for (std::string line; std::getline(lines, line);) {
      json rec = json::parse(line);
      if (rec["record"] == "python_code") {
        dumped.codes[rec["id"]] = rec;
      } else if (rec["record"] == "stack") {
        dumped.stacks[rec["id"]] = rec;
      } else if (rec["record"] == "alloc") {
        dumped.allocs.push_back(std::move(rec));
      }
    }
    return dumped;
  }
  // The same for another of the workloads' Python scripts.
  ProcessResult run_script(const std::string& script, const std::vector<std::string>& extra,
                           const std::string& stacks = "python") {
    const bool api = GetParam() == "PyDLL-api";
    ProcessSpec spec;
    spec.argv = {"/usr/bin/env", "python3", workload(script),
                 std::string(GMT_FAKECUDA_LIB_DIR) + "/libcudart.so.13",
                 api ? "PyDLL" : GetParam()};
    spec.argv.insert(spec.argv.end(), extra.begin(), extra.end());
    spec.set_env = base_env();
    spec.set_env["LD_PRELOAD"] = preload();
    spec.set_env["GPUMEMTRACE_STACKS"] = stacks;
    if (api) spec.set_env["GPUMEMTRACE_TEST_PYTHON_API"] = "1";
    spec.cwd = dir_;
    return run_process(spec);
  }
};

TEST_P(PythonStacks, SitesNameTheScriptsFunctionsAndLines) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  const ProcessResult r = run_allocations();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json rep = report({only_trace()});
  const json frames = site_frames(rep, 192 * kMiB);  // three layers from one call site
  EXPECT_TRUE(has_frame(frames, "allocate", "python_allocations.py",
                        printed(r.out, "allocate_line"), "python"))
      << frames.dump(1);
  EXPECT_TRUE(has_frame(frames, "Model.build_layer", "python_allocations.py",
                        printed(r.out, "build_layer_line"), "python"))
      << frames.dump(1);
  EXPECT_TRUE(
      has_frame(frames, "main", "python_allocations.py", printed(r.out, "main_line"), "python"))
      << frames.dump(1);
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames[0]["function"], "allocate");  // innermost first
  EXPECT_TRUE(frames[0]["module"].is_null());
}

// A fork's child writes a trace of its own, which numbers Python functions anew: frames the
// forking thread met before the fork (and keeps, per thread, with their ids) are named in it too.
TEST_P(PythonStacks, AForksChildNamesTheFramesItsParentHadMet) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  const ProcessResult r = run_allocations({"fork"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const int64_t child = printed(r.out, "child");
  std::string child_trace;
  for (const std::string& t : traces()) {
    if (t.find("." + std::to_string(child) + ".") != std::string::npos) child_trace = t;
  }
  ASSERT_FALSE(child_trace.empty()) << r.out;
  const json frames = site_frames(report({child_trace}), 64 * kMiB);
  EXPECT_TRUE(has_frame(frames, "allocate", "python_allocations.py",
                        printed(r.out, "allocate_line"), "python"))
      << frames.dump(1);
  EXPECT_TRUE(has_frame(frames, "Model.build_layer", "python_allocations.py",
                        printed(r.out, "build_layer_line"), "python"))
      << frames.dump(1);
}

// With native and Python frames (the default), a stack's native frames end at the interpreter's
// first frame, where its Python frames take over: the interpreter's frames below it are not
// unwound (the analyzer would drop them). The report is unchanged: the Python frames follow the
// native ones.
TEST_P(PythonStacks, NativeFramesEndAtTheInterpretersFirstFrame) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  const ProcessResult r = run_allocations({}, "all");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string trace = only_trace();
  const ProcessResult dump = cli({"dump", trace});
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  struct Module {
    std::string name;
    uint64_t start, end;
  };
  std::vector<Module> modules;
  std::map<uint32_t, json> stacks;
  std::set<uint32_t> layer_stacks;  // the stacks of the three 64 MiB layers
  std::istringstream lines(dump.out);
  for (std::string line; std::getline(lines, line);) {
    const json rec = json::parse(line);
    if (rec["record"] == "module") {
      const std::string path = rec["path"];
      modules.push_back({path.substr(path.rfind('/') + 1), rec["start"], rec["end"]});
    } else if (rec["record"] == "stack") {
      stacks[rec["id"]] = rec;
    } else if (rec["record"] == "alloc" && rec["size"] == 64 * kMiB) {
      layer_stacks.insert(rec["stack"].get<uint32_t>());
    }
  }
  const auto module_of = [&](uint64_t address) -> std::string {
    for (const Module& m : modules) {
      if (address >= m.start && address < m.end) return m.name;
    }
    return "?";
  };
  const auto interpreter = [](const std::string& name) {
    return name.starts_with("libpython") || name.starts_with("python");
  };
  ASSERT_EQ(layer_stacks.size(), 1u) << dump.out;
  const json& stack = stacks.at(*layer_stacks.begin());
  ASSERT_EQ(stack["python"].size(), 5u) << stack.dump();  // allocate .. <module>
  std::vector<std::string> names;
  for (uint64_t address : stack["frames"]) names.push_back(module_of(address));
  ASSERT_GE(names.size(), 2u) << stack.dump();
  EXPECT_EQ(names.front(), "libcudart.so.13");
  EXPECT_TRUE(interpreter(names.back())) << testing::PrintToString(names);
  EXPECT_EQ(std::count_if(names.begin(), names.end(), interpreter), 1)
      << testing::PrintToString(names);

  const json frames = site_frames(report({trace}), 192 * kMiB);
  // The native frames down to ctypes, then the five Python frames, innermost first.
  ASSERT_GT(frames.size(), 5u) << frames.dump(1);
  EXPECT_EQ(frames[0]["function"], "cudaMalloc") << frames.dump(1);
  const std::size_t first_python = frames.size() - 5;
  EXPECT_EQ(frames[first_python - 1]["kind"], "native") << frames.dump(1);
  EXPECT_EQ(frames[first_python]["function"], "allocate") << frames.dump(1);
  EXPECT_EQ(frames.back()["function"], "<module>") << frames.dump(1);
  EXPECT_TRUE(
      has_frame(frames, "main", "python_allocations.py", printed(r.out, "main_line"), "python"))
      << frames.dump(1);
}

// Past its first walks, a thread names its Python frames from the frames it met before. Functions
// made with exec, each called twice and dropped (a new code object may take a dropped one's
// address), must each be named, with its own file and line, in every allocation's stack.
TEST_P(PythonStacks, EachOfManyFunctionsMadeAndDroppedIsNamedAtItsLine) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  constexpr int kFunctions = 100;
  const ProcessResult r = run_script("python_churn.py", {std::to_string(kFunctions)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Dumped dumped = dump_only_trace();
  ASSERT_TRUE(dumped.ok);
  const auto& codes = dumped.codes;
  const auto& stacks = dumped.stacks;
  const auto& allocs = dumped.allocs;
  ASSERT_EQ(allocs.size(), 2u * kFunctions);
  for (const json& alloc : allocs) {
    const uint64_t kib = alloc["size"].get<uint64_t>() / 1024;
    const uint64_t i = (kib - 1) / 2;
    const json& python = stacks.at(alloc["stack"])["python"];
    ASSERT_GE(python.size(), 2u) << alloc.dump();
    const uint64_t frame = python[1];  // python[0] is allocate(), which each of them calls
    const json& code = codes.at(frame >> 32);
    EXPECT_EQ(code["name"], "made_" + std::to_string(i)) << alloc.dump();
    EXPECT_EQ(code["file"], "churn_" + std::to_string(i) + ".py") << alloc.dump();
    EXPECT_EQ(frame & 0xffffffffu, i % 5 + 2) << alloc.dump();
  }
}

// A function made while a dropped one's code object, name and file are free takes all three of
// their addresses (the workload counts how many did, 199 of 200 here): which function a frame runs
// cannot be told from where its parts are, and each must still be named after itself.
TEST_P(PythonStacks, AFunctionAtADroppedOnesAddressesIsNamedAfterItself) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  const bool api = GetParam() == "PyDLL-api";
  constexpr int kFunctions = 200;
  const ProcessResult r = run_script("python_reused_code.py", {std::to_string(kFunctions)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (api) {
    // Through the C API we hold a reference to each code object: none is ever freed.
    EXPECT_EQ(printed(r.out, "reused"), 0);
  } else {
    ASSERT_GT(printed(r.out, "reused"), 0) << "no function took a dropped one's addresses";
  }
  const int64_t call_line = printed(r.out, "call_line");
  const Dumped dumped = dump_only_trace();
  ASSERT_TRUE(dumped.ok);
  const auto& codes = dumped.codes;
  const auto& stacks = dumped.stacks;
  const auto& allocs = dumped.allocs;
  ASSERT_EQ(allocs.size(), static_cast<std::size_t>(kFunctions));
  for (const json& alloc : allocs) {
    const uint64_t i = alloc["size"].get<uint64_t>() / 1024 - 1;
    char number[8];
    std::snprintf(number, sizeof number, "%04d", static_cast<int>(i));
    const json& python = stacks.at(alloc["stack"])["python"];
    ASSERT_GE(python.size(), 2u) << alloc.dump();
    const uint64_t frame = python[1];  // python[0] is allocate(), which each of them calls
    const json& code = codes.at(frame >> 32);
    EXPECT_EQ(code["name"], std::string("fn_") + number) << alloc.dump();
    EXPECT_EQ(code["file"], std::string("file_") + number + ".py") << alloc.dump();
    EXPECT_EQ(static_cast<int64_t>(frame & 0xffffffffu), call_line) << alloc.dump();
  }
}

INSTANTIATE_TEST_SUITE_P(GilHeldAndReleased, PythonStacks,
                         ::testing::Values("PyDLL", "CDLL", "PyDLL-api"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace gmt::test
