// SPDX-License-Identifier: Apache-2.0
// The reports' stacks start at the user's line, on the simulated stack: a leak through the
// static runtime (whose frames are in the program's own module) and a leak from Python (whose
// native frames are the runtime's, ctypes' and the interpreter's). `--frames all` shows them all.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/integration/process_runner.h"
#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

class FramePolicy : public TracedRun {
 protected:
  // The lines of `text` after the first one that contains `header`.
  static std::vector<std::string> lines_after(const std::string& text, const std::string& header) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    bool found = false;
    for (std::string line; std::getline(in, line);) {
      if (found) lines.push_back(line);
      if (!found && line.find(header) != std::string::npos) found = true;
    }
    EXPECT_TRUE(found) << "no line with '" << header << "' in\n" << text;
    return lines;
  }

  // tests/workloads/autograd/train.py traced for `steps` steps, with `extra` arguments after.
  ProcessResult run_autograd_training(int steps, const std::vector<std::string>& extra = {}) {
    ProcessSpec spec;
    spec.argv = {"/usr/bin/env", "python3", workload("autograd/train.py"),
                 workload("libgmt_autograd_engine.so"), std::to_string(steps)};
    spec.argv.insert(spec.argv.end(), extra.begin(), extra.end());
    spec.set_env = base_env();
    spec.set_env["LD_PRELOAD"] = preload();
    spec.cwd = dir_;
    return run_process(spec);
  }

  std::string leaks_text(const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> args = {"leaks", only_trace()};
    args.insert(args.end(), extra.begin(), extra.end());
    const ProcessResult r = cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
};

TEST_F(FramePolicy, StaticRuntimeLeakStartsAtTheUsersFunction) {
  const ProcessResult run = run_traced("workload_static_leak", {});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string line = std::to_string(printed(run.out, "leak_line"));
  const std::string text = leaks_text();
  const std::vector<std::string> group = lines_after(text, "32.0 MiB in 1  ");
  ASSERT_GE(group.size(), 3u) << text;
  EXPECT_EQ(group[0], "        leaky::load_table()  static_leak.cpp:" + line) << text;
  EXPECT_EQ(group[1], "          via cudaMalloc") << text;
  EXPECT_EQ(group[2].rfind("        main  static_leak.cpp:", 0), 0u) << text;

  // Every frame: the runtime's, then the user's, then the program's start.
  const std::string all = leaks_text({"--frames", "all"});
  const std::vector<std::string> frames = lines_after(all, "32.0 MiB in 1  ");
  const auto at = [&](const std::string& function) {
    for (std::size_t i = 0; i < frames.size(); ++i) {
      if (frames[i].rfind("        " + function, 0) == 0) return i;
    }
    ADD_FAILURE() << function << " not in\n" << all;
    return frames.size();
  };
  EXPECT_LT(at("cudaMalloc  runtime_memory.cpp:"), at("leaky::load_table()"));
  EXPECT_LT(at("leaky::load_table()"), at("main  static_leak.cpp"));
  EXPECT_LT(at("main  static_leak.cpp"), at("_start  (workload_static_leak)"));
  EXPECT_EQ(all.find("via "), std::string::npos) << all;

  // JSON keeps every frame and marks the one the text starts from.
  const ProcessResult leaks_json = cli({"leaks", only_trace(), "--json"});
  ASSERT_EQ(leaks_json.exit_code, 0) << leaks_json.err;
  const json stack = json::parse(leaks_json.out)["leaks"][0]["frames"];
  int users = 0;
  for (const json& frame : stack) {
    if (!frame["user"].get<bool>()) continue;
    ++users;
    EXPECT_EQ(frame["function"], "leaky::load_table()");
    EXPECT_EQ(frame["line"], printed(run.out, "leak_line"));
  }
  EXPECT_EQ(users, 1) << stack.dump(1);
  EXPECT_EQ(stack[0]["user"], false);
}

TEST_F(FramePolicy, PythonLeakStartsAtThePythonLine) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  ProcessSpec spec;
  spec.argv = {"/usr/bin/env", "python3", workload("python_allocations.py"),
               std::string(GMT_FAKECUDA_LIB_DIR) + "/libcudart.so.13", "CDLL"};
  spec.set_env = base_env();
  spec.set_env["LD_PRELOAD"] = preload();
  spec.cwd = dir_;
  const ProcessResult r = run_process(spec);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = leaks_text();
  // The three layers, from one call site, are never freed.
  const std::vector<std::string> group = lines_after(text, "192 MiB in 3  ");
  ASSERT_GE(group.size(), 3u) << text;
  EXPECT_EQ(group[0], "        allocate  python_allocations.py:" +
                          std::to_string(printed(r.out, "allocate_line")))
      << text;
  EXPECT_EQ(group[1], "          via cudaMalloc") << text;
  EXPECT_EQ(group[2], "        Model.build_layer  python_allocations.py:" +
                          std::to_string(printed(r.out, "build_layer_line")))
      << text;

  const std::string all = leaks_text({"--frames", "all"});
  const std::vector<std::string> frames = lines_after(all, "192 MiB in 3  ");
  ASSERT_FALSE(frames.empty()) << all;
  EXPECT_EQ(frames[0].rfind("        cudaMalloc  runtime_memory.cpp:", 0), 0u) << all;
}

// Issue 50's train.py: one helper (line 6) makes three allocations live at the peak, called from
// lines 12, 15 and 16. Every command that names sites in one line tells them apart by their
// callers: peak's, leaks' and oom's JSON, report's, export's jsonl rows and top's.
TEST_F(FramePolicy, RowsMadeByOneHelperAreNamedByTheirCallers) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  // The lines as the test names them: the helper's call at 6, its callers at 12, 15 and 16, a
  // plain call at 10, and a request the device cannot satisfy at 17.
  std::ofstream(dir_ + "/train.py")
      << "import ctypes, sys\n"
         "cudart = ctypes.CDLL(sys.argv[1])\n"
         "\n"
         "def alloc(n):\n"
         "    p = ctypes.c_void_p()\n"
         "    assert cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)) == 0\n"
         "    return p\n"
         "\n"
         "MiB = 1 << 20\n"
         "plain = ctypes.c_void_p(); assert cudart.cudaMalloc(ctypes.byref(plain), "
         "ctypes.c_size_t(MiB)) == 0\n"
         "\n"
         "weights = alloc(8 * MiB)\n"
         "\n"
         "\n"
         "grads = alloc(4 * MiB)\n"
         "state = alloc(2 * MiB)\n"
         "assert cudart.cudaMalloc(ctypes.byref(ctypes.c_void_p()), ctypes.c_size_t(1 << 50)) != "
         "0\n";
  ProcessSpec spec;
  spec.argv = {"/usr/bin/env", "python3", "train.py",
               std::string(GMT_FAKECUDA_LIB_DIR) + "/libcudart.so.13"};
  spec.set_env = base_env();
  spec.set_env["LD_PRELOAD"] = preload();
  spec.cwd = dir_;
  const ProcessResult r = run_process(spec);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string trace = only_trace();
  const std::vector<std::string> expected = {"train.py:12 > train.py:6", "train.py:15 > train.py:6",
                                             "train.py:16 > train.py:6", "train.py:10"};
  const auto sites = [](const json& rows) {
    std::vector<std::string> names;
    for (const json& row : rows) names.push_back(row["site"]);
    return names;
  };
  const json peak = json::parse(cli({"peak", "--json", trace}).out);
  EXPECT_EQ(sites(peak["devices"][0]["groups"]), expected) << peak.dump(1);
  const json leaks = json::parse(cli({"leaks", "--json", trace}).out);
  EXPECT_EQ(sites(leaks["leaks"]), expected) << leaks.dump(1);
  const json rep = report({trace});
  EXPECT_EQ(sites(rep["leaks"]), expected);
  EXPECT_EQ(sites(rep["devices"][0]["peak_sites"]), expected);
  const json oom = json::parse(cli({"oom", "--json", trace}).out);
  ASSERT_EQ(oom["ooms"].size(), 1u);
  EXPECT_EQ(oom["ooms"][0]["site"], "train.py:17");
  EXPECT_EQ(sites(oom["ooms"][0]["holders"]), expected);
  // jsonl: the trace's rows, named alike where they are the same site.
  const ProcessResult jsonl = cli({"export", trace, "--format", "jsonl", "-o", "-"});
  std::istringstream lines(jsonl.out);
  std::set<std::string> named;
  for (std::string line; std::getline(lines, line);) {
    const json row = json::parse(line);
    if (!row["site"].is_null()) named.insert(row["site"].get<std::string>());
  }
  std::set<std::string> all(expected.begin(), expected.end());
  all.insert("train.py:17");
  EXPECT_EQ(named, all);
}

// Gradients allocated on a native thread of the autograd engine's (no Python frames of its own)
// while the main thread waits in backward(): the leak is shown at the user's backward() call,
// under a mark that says the frames are the calling thread's, without torch.autograd's frames.
// So is what that thread allocates from the driver itself, as cuBLAS its workspace.
TEST_F(FramePolicy, AutogradThreadBlocksAreShownAtTheBackwardCall) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  constexpr int kSteps = 5;
  const ProcessResult r = run_autograd_training(kSteps);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const int64_t line = printed(r.out, "backward_line");

  const std::string text = leaks_text();
  // One gradient kept a step, so the group grows every step: `unfreed`, or `probable_leak` when
  // its five rises fall in five of `leaks`' nine sample intervals (which the threads' timing
  // decides). What this test is about is its frames.
  const std::vector<std::string> group = lines_after(text, "5.00 MiB in 5  ");
  ASSERT_GE(group.size(), 3u) << text;
  EXPECT_EQ(group[0], "        train_step  train.py:" + std::to_string(line)) << text;
  EXPECT_NE(group[1].find("\u2190 autograd thread, for backward() below"), std::string::npos)
      << text;
  EXPECT_EQ(group[2].rfind("        <module>  train.py:", 0), 0u) << text;

  // The engine thread's own workspace, a driver allocation (cuBLAS's, in PyTorch), likewise.
  const std::vector<std::string> workspace = lines_after(text, "1.25 MiB in 5  ");
  ASSERT_GE(workspace.size(), 3u) << text;
  EXPECT_EQ(workspace[0], "        train_step  train.py:" + std::to_string(line)) << text;
  EXPECT_EQ(workspace[1],
            "          via cudaMalloc \u2190 libgmt_autograd_engine \u2190 autograd thread, for "
            "backward() below")
      << text;
  EXPECT_EQ(workspace[2].rfind("        <module>  train.py:", 0), 0u) << text;

  const ProcessResult leaks_json = cli({"leaks", only_trace(), "--json"});
  ASSERT_EQ(leaks_json.exit_code, 0) << leaks_json.err;
  const json leaks = json::parse(leaks_json.out);
  const json* kept = nullptr;
  for (const json& g : leaks["leaks"]) {
    if (g["level"] == "block" && g["count"] == kSteps) kept = &g;  // unfreed or growing (above)
  }
  ASSERT_NE(kept, nullptr) << leaks_json.out;
  EXPECT_EQ((*kept)["bytes"], kSteps << 20);
  // Native frames (the engine's thread), the mark, then the caller's frames from train_step out.
  std::vector<std::string> kinds;
  const json* user = nullptr;
  for (const json& f : (*kept)["frames"]) {
    if (kinds.empty() || kinds.back() != f["kind"]) kinds.push_back(f["kind"]);
    if (f["user"].get<bool>()) user = &f;
    if (f["kind"] == "python") {
      EXPECT_EQ(f["file"].get<std::string>().find("/torch/"), std::string::npos) << f.dump();
    }
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"native", "attribution", "python"}));
  ASSERT_NE(user, nullptr);
  EXPECT_EQ((*user)["function"], "train_step");
  EXPECT_EQ((*user)["line"], line);
}

// A request that the autograd engine's thread makes of the driver and that fails is shown at the
// user's backward() call in `oom`, as what it allocates is.
TEST_F(FramePolicy, AutogradThreadFailedRequestIsShownAtTheBackwardCall) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  const ProcessResult r = run_autograd_training(2, {"fail"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const int64_t line = printed(r.out, "backward_line");

  const ProcessResult oom = cli({"oom", only_trace()});
  ASSERT_EQ(oom.exit_code, 0) << oom.err;
  EXPECT_EQ(oom.out.rfind("2 failed allocations in ", 0), 0u) << oom.out;
  const std::vector<std::string> failed = lines_after(oom.out, "    failed call");
  ASSERT_GE(failed.size(), 3u) << oom.out;
  EXPECT_EQ(failed[0], "      train_step  train.py:" + std::to_string(line)) << oom.out;
  EXPECT_EQ(failed[1],
            "        via cudaMalloc \u2190 libgmt_autograd_engine \u2190 autograd thread, for "
            "backward() below")
      << oom.out;
  EXPECT_EQ(failed[2].rfind("      <module>  train.py:", 0), 0u) << oom.out;
}

}  // namespace
}  // namespace gmt::test
