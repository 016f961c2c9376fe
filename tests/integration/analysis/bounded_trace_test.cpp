// SPDX-License-Identifier: Apache-2.0
// Bounded traces (GPUMEMTRACE_MAX_SIZE): a run that writes about a hundred times the limit keeps
// its file within the limit, and still explains exactly what is live (at exit, by site, at a
// peak inside the history kept) against the same run traced without a limit.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <thread>

#include "tests/integration/traced_run_fixture.h"

namespace gmt::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr uint64_t kLimit = 1 * kMiB;
constexpr uint64_t kChunk = 64 * 1024;
// Iterations of workload_bounded_history: two events each, about 100 MiB of trace unbounded.
constexpr long kIterations = 5'000'000;

class BoundedTrace : public TracedRun {
 protected:
  json command_json(std::vector<std::string> args) const {
    const ProcessResult r = cli(std::move(args));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json();
  }
  // Runs the workload traced and moves its trace to `name` in dir_/kept (out of the way of the
  // next run's).
  std::string traced_to(const std::string& name, std::map<std::string, std::string> env,
                        std::vector<std::string> args = {std::to_string(kIterations)}) {
    const ProcessResult r = run_traced("workload_bounded_history", std::move(args), std::move(env));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    fs::create_directories(dir_ + "/kept");
    const std::string path = dir_ + "/kept/" + name;
    fs::rename(only_trace(), path);
    return path;
  }
  // The bytes a leaks --json group holds at the site whose frames name `function`.
  static uint64_t leak_bytes_at(const json& leaks, const std::string& function) {
    uint64_t bytes = 0;
    for (const json& g : leaks["leaks"]) {
      if (g.dump().find(function) != std::string::npos) bytes += g["bytes"].get<uint64_t>();
    }
    return bytes;
  }
};

TEST_F(BoundedTrace, StaysWithinItsLimitAndExplainsEveryLiveByte) {
  const std::string bounded = traced_to("bounded.gmt", {{"GPUMEMTRACE_MAX_SIZE", "1MiB"}});
  const std::string whole = traced_to("whole.gmt", {});
  // About a hundred times the limit written; the file within the limit plus one chunk per
  // writing thread (the program's and the sampler's).
  EXPECT_GE(fs::file_size(whole), 95 * kLimit);
  EXPECT_LE(fs::file_size(bounded), kLimit + 2 * kChunk);

  const json info = command_json({"info", bounded, "--json"});
  ASSERT_TRUE(info["history"].is_object()) << info.dump();
  EXPECT_EQ(info["history"]["max_size"], kLimit);
  EXPECT_GT(info["history"]["dropped_events"].get<uint64_t>(), 2 * kIterations * 9 / 10);
  EXPECT_GT(info["history"]["kept_from_ns"].get<uint64_t>(), 0u);
  const json whole_info = command_json({"info", whole, "--json"});
  EXPECT_TRUE(whole_info["history"].is_null());
  EXPECT_EQ(whole_info["format"], "4.10");
  EXPECT_EQ(info["format"], "4.10");

  // Live at exit: the 8 held MiB and one 64 KiB leak per 10000 iterations, exactly, as the
  // unbounded trace says too.
  const uint64_t leaks = (kIterations + 9999) / 10000;
  const json rep = report({bounded});
  const json whole_rep = report({whole});
  const json& d = device(rep, 0);
  EXPECT_EQ(d["live_at_exit_bytes"], 8 * kMiB + leaks * 65536);
  EXPECT_EQ(d["live_at_exit_count"], 8 + leaks);
  EXPECT_EQ(d["live_at_exit_bytes"], device(whole_rep, 0)["live_at_exit_bytes"]);
  // The peak, 1000 iterations before the end (inside the history kept): the held memory, the
  // leaks so far and the 256 MiB spike.
  const uint64_t leaks_at_spike = (kIterations - 1000 + 9999) / 10000 + 0;
  EXPECT_EQ(d["peak_bytes"], 8 * kMiB + leaks_at_spike * 65536 + 256 * kMiB);
  EXPECT_EQ(d["peak_bytes"], device(whole_rep, 0)["peak_bytes"]);

  // By site: the same in both, the held buffers carried from before the history kept.
  const json leaks_json = command_json({"leaks", bounded, "--json"});
  const json whole_leaks = command_json({"leaks", whole, "--json"});
  EXPECT_EQ(leak_bytes_at(leaks_json, "leaked_buffer"), leaks * 65536);
  EXPECT_EQ(leak_bytes_at(leaks_json, "held_buffer"), 8 * kMiB);
  EXPECT_EQ(leak_bytes_at(leaks_json, "leaked_buffer"),
            leak_bytes_at(whole_leaks, "leaked_buffer"));
  EXPECT_EQ(leak_bytes_at(leaks_json, "held_buffer"), leak_bytes_at(whole_leaks, "held_buffer"));

  // Every command says from when the history is complete.
  const ProcessResult text = cli({"info", bounded});
  EXPECT_NE(text.out.find("history kept from "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(" allocations ("), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("carried from before"), std::string::npos) << text.out;
  // Once: info's own output has it, so its errors do not repeat it.
  EXPECT_EQ(text.err.find("history kept from "), std::string::npos) << text.err;
  EXPECT_NE(cli({"leaks", bounded}).err.find("history kept from "), std::string::npos);
}

// VMM memory mapped long before the history kept: a handle released right after its mapping (the
// mapping keeps its memory, as NCCL's buffers) and one retained and released once. The
// checkpoints carry the mappings and the references, so both are live at exit, as unbounded.
TEST_F(BoundedTrace, VmmMemoryKeptByMappingsAndReferencesIsCarried) {
  constexpr long kVmmIterations = 1'500'000;
  const std::vector<std::string> args = {std::to_string(kVmmIterations), "vmm"};
  const std::string bounded = traced_to("bounded.gmt", {{"GPUMEMTRACE_MAX_SIZE", "1MiB"}}, args);
  const std::string whole = traced_to("whole.gmt", {}, args);
  EXPECT_GE(fs::file_size(whole), 20 * kLimit);
  const json info = command_json({"info", bounded, "--json"});
  ASSERT_TRUE(info["history"].is_object()) << info.dump();
  EXPECT_GT(info["history"]["dropped_events"].get<uint64_t>(), kVmmIterations);

  const uint64_t leaks = (kVmmIterations + 9999) / 10000;
  const uint64_t live = 8 * kMiB + leaks * 65536 + 48 * kMiB;
  EXPECT_EQ(device(report({whole}), 0)["live_at_exit_bytes"], live);
  EXPECT_EQ(device(report({bounded}), 0)["live_at_exit_bytes"], live);
  const json leaks_json = command_json({"leaks", bounded, "--json"});
  EXPECT_EQ(leak_bytes_at(leaks_json, "vmm_buffers"), 48 * kMiB) << leaks_json.dump(1);
  EXPECT_EQ(leak_bytes_at(leaks_json, "vmm_buffers"),
            leak_bytes_at(command_json({"leaks", whole, "--json"}), "vmm_buffers"));

  // The mappings are carried too: the mapped bytes are the unbounded run's.
  const json bounded_report = report({bounded});
  const json whole_report = report({whole});
  const json& kinds = device(bounded_report, 0)["by_kind"];
  EXPECT_EQ(kinds["vmm_physical"]["live_at_exit_bytes"], 48 * kMiB) << kinds.dump();
  EXPECT_EQ(kinds["vmm_mapping"]["live_at_exit_bytes"], 48 * kMiB) << kinds.dump();
  EXPECT_EQ(kinds["vmm_mapping"], device(whole_report, 0)["by_kind"]["vmm_mapping"]);
}

// Four threads allocating and freeing at once, some buffers freed by another thread than the one
// that allocated them: the checkpoints, folded from every thread's records in time order, still
// carry exactly what is live.
TEST_F(BoundedTrace, ThreadsAllocatingAndFreeingAtOnceAreCarriedExactly) {
  constexpr long kThreadIterations = 2'000'000;  // 500,000 on each of 4 threads
  const std::vector<std::string> args = {std::to_string(kThreadIterations), "threads"};
  const std::string bounded = traced_to("bounded.gmt", {{"GPUMEMTRACE_MAX_SIZE", "1MiB"}}, args);
  const std::string whole = traced_to("whole.gmt", {}, args);
  EXPECT_GE(fs::file_size(whole), 30 * kLimit);
  // The file within the limit plus one chunk per writing thread (4 workers, main, the sampler).
  EXPECT_LE(fs::file_size(bounded), kLimit + 6 * kChunk);
  const json info = command_json({"info", bounded, "--json"});
  ASSERT_TRUE(info["history"].is_object()) << info.dump();
  EXPECT_GT(info["history"]["dropped_events"].get<uint64_t>(), kThreadIterations);

  // 8 held MiB, and on each thread one 64 KiB leak per 10000 of its iterations.
  const uint64_t leaks = 4 * ((kThreadIterations / 4 + 9999) / 10000);
  const json bounded_report = report({bounded});
  const json& d = device(bounded_report, 0);
  EXPECT_EQ(d["live_at_exit_bytes"], 8 * kMiB + leaks * 65536);
  EXPECT_EQ(d["live_at_exit_count"], 8 + leaks);
  EXPECT_EQ(d["live_at_exit_bytes"], device(report({whole}), 0)["live_at_exit_bytes"]);
  const json leaks_json = command_json({"leaks", bounded, "--json"});
  EXPECT_EQ(leak_bytes_at(leaks_json, "leaked_buffer"), leaks * 65536);
  EXPECT_EQ(leak_bytes_at(leaks_json, "held_buffer"), 8 * kMiB);
  EXPECT_EQ(leak_bytes_at(leaks_json, "handed_buffer"), 0u);
}

// The bound holds whatever the number of threads (issue #43): past the chunks threads may hold,
// they share one; the file never passes its limit. Whatever was carried keeps its stack, and the
// leak that grew all along is still a probable leak, as it is unbounded.
TEST_F(BoundedTrace, TheBoundHoldsWhateverTheNumberOfThreads) {
  constexpr long kManyIterations = 1'000'000;
  for (const int threads : {1, 2, 4, 64}) {
    SCOPED_TRACE(threads);
    const std::vector<std::string> args = {std::to_string(kManyIterations), "threads",
                                           std::to_string(threads)};
    const std::string name = "threads" + std::to_string(threads);
    const std::string bounded = traced_to(name + ".gmt", {{"GPUMEMTRACE_MAX_SIZE", "1MiB"}}, args);
    EXPECT_LE(fs::file_size(bounded), kLimit);
    const json info = command_json({"info", bounded, "--json"});
    ASSERT_TRUE(info["history"].is_object()) << info.dump();
    EXPECT_LE(info["history"]["written_bytes"].get<uint64_t>(), kLimit);
    EXPECT_GT(info["history"]["dropped_events"].get<uint64_t>(), kManyIterations);
    EXPECT_TRUE(info["problems"].empty()) << info.dump();
    EXPECT_EQ(info["integrity"], "complete");

    // 8 held MiB, and on each thread one 64 KiB leak per 10000 of its iterations.
    const uint64_t leaks = threads * ((kManyIterations / threads + 9999) / 10000);
    const json rep = report({bounded});
    const json& d = device(rep, 0);
    EXPECT_EQ(d["live_at_exit_bytes"], 8 * kMiB + leaks * 65536);
    EXPECT_EQ(d["live_at_exit_count"], 8 + leaks);
    const json leaks_json = command_json({"leaks", bounded, "--json"});
    EXPECT_EQ(leak_bytes_at(leaks_json, "leaked_buffer"), leaks * 65536);
    EXPECT_EQ(leak_bytes_at(leaks_json, "held_buffer"), 8 * kMiB);
    EXPECT_EQ(leak_bytes_at(leaks_json, "handed_buffer"), 0u);
    for (const json& g : leaks_json["leaks"]) {
      EXPECT_FALSE(g["frames"].empty()) << g.dump();
      if (g.dump().find("leaked_buffer") != std::string::npos) {
        EXPECT_EQ(g["class"], "probable_leak") << g.dump();
      }
      if (g.dump().find("held_buffer") != std::string::npos) {
        EXPECT_EQ(g["class"], "unfreed") << g.dump();
      }
    }
    const ProcessResult text = cli({"leaks", bounded});
    EXPECT_EQ(text.out.find("no stack recorded"), std::string::npos) << text.out;
    fs::remove(bounded);
  }
}

// A live set too large for the bound: each checkpoint carries 30,000 blocks, more than half of
// 1 MiB. The file grows past the bound, and every command says by how much and why.
TEST_F(BoundedTrace, ALiveSetTooLargeForTheBoundIsSaidToBe) {
  const ProcessResult run = run_traced(
      "workload_cached_training", {"30000", "1"},
      {{"GPUMEMTRACE_MAX_SIZE", "1MiB"}, {"FAKECUDA_DEVICE_MEMORY", std::to_string(1ull << 46)}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  const json info = command_json({"info", trace, "--json"});
  const uint64_t written = info["history"]["written_bytes"];
  EXPECT_GT(written, kLimit);
  ASSERT_LT(written, 10 * kMiB);
  EXPECT_EQ(written, fs::file_size(trace));
  char size[32];  // as the reports write sizes of 1 to 10 MiB: three digits
  std::snprintf(size, sizeof size, "%.2f MiB", static_cast<double>(written) / kMiB);
  const ProcessResult text = cli({"info", trace});
  const std::string said = "the file grew to " + std::string(size) +
                           ", past its bound of 1.00 MiB (each checkpoint carries the whole live "
                           "set, ";
  EXPECT_NE(text.out.find(said), std::string::npos) << text.out;
  EXPECT_NE(cli({"report", trace}).out.find(said), std::string::npos);
  const ProcessResult check = cli({"check", trace});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_EQ(check.out.rfind("note: " + trace + " grew to " + std::string(size) +
                                ", past its bound of 1.00 MiB (the live set's checkpoints did not "
                                "fit in it)\n",
                            0),
            0u)
      << check.out;
}

// A bounded trace's summary keeps its history: `report` of it says from when, as of the trace.
TEST_F(BoundedTrace, ASummaryKeepsTheHistoryLine) {
  const std::string bounded =
      traced_to("bounded.gmt", {{"GPUMEMTRACE_MAX_SIZE", "1MiB"}}, {"1000000"});
  const std::string summary = dir_ + "/kept/bounded.summary";
  const ProcessResult summarized = cli({"summarize", bounded, "-o", summary});
  ASSERT_EQ(summarized.exit_code, 0) << summarized.err;
  const ProcessResult of_trace = cli({"report", bounded});
  const ProcessResult of_summary = cli({"report", summary});
  ASSERT_EQ(of_summary.exit_code, 0) << of_summary.err;
  const auto history_line = [](const std::string& text) {
    const std::size_t at = text.find("history kept from ");
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
  };
  EXPECT_NE(history_line(of_trace.out), "") << of_trace.out;
  EXPECT_EQ(history_line(of_summary.out), history_line(of_trace.out)) << of_summary.out;
  EXPECT_EQ(report({summary})["traces"][0]["history"], report({bounded})["traces"][0]["history"]);
}

// A phase opened before the history kept, and still open: the checkpoints carry it, so the peak
// inside the window is named by the same path of phases as unbounded.
TEST_F(BoundedTrace, APhaseOpenedBeforeTheHistoryKeptNamesThePeak) {
  constexpr long kPhaseIterations = 1'500'000;
  const std::vector<std::string> args = {std::to_string(kPhaseIterations), "phases"};
  const std::string bounded = traced_to("bounded.gmt", {{"GPUMEMTRACE_MAX_SIZE", "1MiB"}}, args);
  const std::string whole = traced_to("whole.gmt", {}, args);
  const json info = command_json({"info", bounded, "--json"});
  ASSERT_TRUE(info["history"].is_object()) << info.dump();
  EXPECT_GT(info["history"]["dropped_events"].get<uint64_t>(), kPhaseIterations);
  const json bounded_report = report({bounded});
  const json whole_report = report({whole});
  EXPECT_EQ(device(bounded_report, 0)["peak_phase"], "training > spike");
  EXPECT_EQ(device(whole_report, 0)["peak_phase"], "training > spike");
}

TEST_F(BoundedTrace, WithoutTheVariableTheTraceHasNoLimitAndNoCheckpoint) {
  const ProcessResult r = run_traced("workload_runtime_shared", {"alloc:a:" + mib(2), "free:a"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string file = read_file(only_trace());
  const std::string header = file.substr(0, 64);
  ASSERT_EQ(header.size(), 64u);
  EXPECT_EQ(header[10], 10);  // minor version, as a bounded trace's
  EXPECT_EQ(header.substr(16, 24), std::string(24, '\0'));
  // Where the chunks end (4.9): the whole file, which a normal exit leaves with no reserve.
  uint64_t chunks_end = 0;
  std::memcpy(&chunks_end, header.data() + 40, 8);
  EXPECT_EQ(chunks_end, file.size());
  EXPECT_EQ(header.substr(48), std::string(16, '\0'));
  const ProcessResult dump = cli({"dump", only_trace()});
  EXPECT_EQ(dump.out.find("checkpoint"), std::string::npos);
  EXPECT_EQ(dump.out.find("carried"), std::string::npos);
}

TEST_F(BoundedTrace, ABadValueWarnsAndRecordsWithoutALimit) {
  for (const std::string value : {"12parsecs", "100KiB", "-5"}) {
    SCOPED_TRACE(value);
    const ProcessResult r = run_traced("workload_runtime_shared", {"alloc:a:" + mib(2), "free:a"},
                                       {{"GPUMEMTRACE_MAX_SIZE", value}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("GPUMEMTRACE_MAX_SIZE='" + value + "'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("recording without a limit"), std::string::npos) << r.err;
    EXPECT_EQ(read_file(only_trace()).substr(16, 8), std::string(8, '\0'));  // no limit
    fs::remove(only_trace());
  }
}

TEST_F(BoundedTrace, RunMaxSizeBoundsTheTraceAndRefusesABadSize) {
  const ProcessResult bad =
      cli({"run", "--max-size", "10parsecs", "--", workload("workload_runtime_shared")});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--max-size"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("10parsecs"), std::string::npos) << bad.err;

  std::map<std::string, std::string> env = base_env();
  // Under AddressSanitizer its runtime must come first in what `run` preloads.
  if (!sanitizer_runtime().empty()) env["LD_PRELOAD"] = sanitizer_runtime();
  const ProcessResult r = cli({"run", "--max-size=2MiB", "-o", dir_ + "/run.%p.gmt", "--",
                               workload("workload_runtime_shared"), "alloc:a:" + mib(2)},
                              env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json info = command_json({"info", only_trace(), "--json"});
  EXPECT_EQ(info["format"], "4.10");
  EXPECT_EQ(info["history"]["max_size"], 2 * kMiB);
  EXPECT_EQ(info["history"]["dropped_events"], 0);

  // The size syntax `check --max-peak` takes (format/size_text.h): 1.5GiB was refused.
  fs::remove(only_trace());
  const ProcessResult decimal =
      cli({"run", "--max-size", "1.5MiB", "-o", dir_ + "/run.%p.gmt", "--",
           workload("workload_runtime_shared"), "alloc:a:" + mib(2)},
          env);
  ASSERT_EQ(decimal.exit_code, 0) << decimal.err;
  EXPECT_EQ(command_json({"info", only_trace(), "--json"})["history"]["max_size"], 3 * kMiB / 2);
}

// A fork halfway, while the checkpoint thread works: the child's trace is bounded and explains
// its own live memory (none of its parent's), and the parent's goes on as if nothing happened.
TEST_F(BoundedTrace, AForkedChildKeepsABoundedTraceOfItsOwn) {
  constexpr long kForkIterations = 2'000'000;  // 1,000,000 more in the child
  const ProcessResult r =
      run_traced("workload_bounded_history", {std::to_string(kForkIterations), "fork"},
                 {{"GPUMEMTRACE_MAX_SIZE", "1MiB"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const int64_t child = printed(r.out, "child");
  const std::vector<std::string> found = traces();
  ASSERT_EQ(found.size(), 2u) << r.out;
  std::map<int64_t, uint64_t> live;  // pid -> live bytes at exit
  for (const std::string& trace : found) {
    EXPECT_LE(fs::file_size(trace), kLimit + 2 * kChunk) << trace;
    const json info = command_json({"info", trace, "--json"});
    ASSERT_TRUE(info["history"].is_object()) << info.dump();
    EXPECT_GT(info["history"]["dropped_events"].get<uint64_t>(), kForkIterations / 2) << trace;
    const json rep = report({trace});
    live[rep["traces"][0]["pid"].get<int64_t>()] =
        device(rep, 0)["live_at_exit_bytes"].get<uint64_t>();
  }
  ASSERT_EQ(live.size(), 2u);
  ASSERT_EQ(live.count(child), 1u);
  // The child: one leak per 10000 of its iterations. The parent: its 8 held MiB and its leaks.
  EXPECT_EQ(live[child], (kForkIterations / 2 + 9999) / 10000 * 65536);
  live.erase(child);
  EXPECT_EQ(live.begin()->second, 8 * kMiB + (kForkIterations + 9999) / 10000 * 65536);
}

// Killed while the trace is being reused: still readable, with exactly the live set the program
// reported (the trace may hold one call more, made and traced but not reported).
TEST_F(BoundedTrace, ASigkillMidRunLeavesAReadableTraceWithTheRightLiveSet) {
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    for (const auto& [name, value] : base_env()) setenv(name.c_str(), value.c_str(), 1);
    setenv("GPUMEMTRACE_MAX_SIZE", "1MiB", 1);
    setenv("LD_PRELOAD", preload().c_str(), 1);
    if (!sanitizer_runtime().empty())
      setenv("ASAN_OPTIONS", "detect_leaks=0:handle_segv=0:handle_abort=0", 1);
    const std::string program = workload("workload_crash_loop");
    execl(program.c_str(), program.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  // Each call reported is one line; about 200000 calls make several times the limit.
  std::string reported;
  char buf[65536];
  std::size_t lines = 0;
  for (ssize_t n; lines < 200000 && (n = read(out[0], buf, sizeof buf)) > 0;) {
    reported.append(buf, static_cast<std::size_t>(n));
    lines += static_cast<std::size_t>(std::count(buf, buf + n, '\n'));
  }
  kill(pid, SIGKILL);
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;)
    reported.append(buf, static_cast<std::size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;

  std::map<uint64_t, uint64_t> expected;  // address -> size, as reported
  std::istringstream in(reported);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string op;
    uint64_t address = 0;
    uint64_t size = 0;
    fields >> op >> address >> size;
    if (op == "a") expected[address] = size;
    if (op == "f") expected.erase(address);
  }
  const std::string trace = only_trace();
  EXPECT_LE(fs::file_size(trace), kLimit + 2 * kChunk);
  const json info = command_json({"info", trace, "--json"});
  ASSERT_TRUE(info["history"].is_object()) << info.dump();
  EXPECT_GT(info["history"]["dropped_events"].get<uint64_t>(), 0u);
  EXPECT_TRUE(info["problems"].empty()) << info.dump();

  // The live set the trace ends with: its window's allocations (the carried first) and frees.
  std::map<uint64_t, uint64_t> traced;
  const ProcessResult dump = cli({"dump", trace});
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  std::istringstream records(dump.out);
  for (std::string line; std::getline(records, line);) {
    const json rec = json::parse(line);
    if (rec["record"] == "alloc") traced[rec["address"]] = rec["size"];
    if (rec["record"] == "free") traced.erase(rec["address"].get<uint64_t>());
  }
  std::size_t differences = 0;
  for (const auto& [address, size] : expected) {
    auto it = traced.find(address);
    differences += it == traced.end() || it->second != size ? 1 : 0;
  }
  for (const auto& [address, size] : traced) differences += expected.count(address) == 0 ? 1 : 0;
  EXPECT_LE(differences, 1u) << expected.size() << " live reported, " << traced.size()
                             << " in the trace";
  EXPECT_GE(expected.size(), 32u);

  // `top`, which reads a trace as it is written, rebuilds the same live set from the checkpoint.
  const ProcessResult top = cli({"top", "--once", "--json", trace});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  const json frame = json::parse(top.out);
  ASSERT_EQ(frame["processes"].size(), 1u) << top.out;
  ASSERT_EQ(frame["processes"][0]["devices"].size(), 1u) << top.out;
  uint64_t traced_bytes = 0;
  for (const auto& [address, size] : traced) traced_bytes += size;
  EXPECT_EQ(frame["processes"][0]["devices"][0]["live_bytes"], traced_bytes) << top.out;
}

}  // namespace
}  // namespace gmt::test
