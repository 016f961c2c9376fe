// SPDX-License-Identifier: Apache-2.0
// The traced program is never harmed (#21): whatever it does to its descriptors, its file-size
// limit, its disk, with exec or with signals, its own files, stdout and exit status are byte
// for byte what they are untraced. When recording cannot go on, it stops, and the trace says
// why and when; everything recorded up to then is read.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

constexpr const char* kProgram = "workload_hostile_program";

class ProgramUnharmed : public TracedRun {
 protected:
  // Runs `mode` untraced, then traced, each writing its own copy of the program's file, and
  // expects the two runs to be indistinguishable: the file's bytes, stdout, exit status.
  // Returns the traced run.
  ProcessResult run_both(const std::string& mode, const std::vector<std::string>& args,
                         const std::map<std::string, std::string>& env = {}) {
    std::vector<std::string> untraced_ops = {mode, dir_ + "/untraced.out"};
    std::vector<std::string> traced_ops = {mode, dir_ + "/traced.out"};
    untraced_ops.insert(untraced_ops.end(), args.begin(), args.end());
    traced_ops.insert(traced_ops.end(), args.begin(), args.end());
    const ProcessResult untraced = run_untraced(kProgram, untraced_ops, env);
    EXPECT_EQ(untraced.exit_code, 0) << untraced.out << untraced.err;
    EXPECT_NE(untraced.out.find("status=ok"), std::string::npos) << untraced.out;
    const ProcessResult traced = run_traced(kProgram, traced_ops, env);
    EXPECT_EQ(traced.signal, untraced.signal) << traced.err;
    EXPECT_EQ(traced.exit_code, untraced.exit_code) << traced.out << traced.err;
    EXPECT_EQ(traced.out, untraced.out);
    const std::string mine = read_file(dir_ + "/traced.out");
    const std::string theirs = read_file(dir_ + "/untraced.out");
    EXPECT_EQ(mine.size(), theirs.size());
    EXPECT_TRUE(mine == theirs) << "the program's own file differs when traced";
    return traced;
  }

  static uint64_t file_size(const std::string& path) { return std::filesystem::file_size(path); }
};

constexpr uint64_t kOwnFileBytes = 2 * kMiB;
// Enough pairs for the trace to grow several times past its first 1 MiB reserve: the
// descriptor is used, and checked, at each growth.
constexpr int kPairs = 100000;

// The program's first allocation creates the trace; then it closes every descriptor it did not
// open, as daemons do, and opens its own file, which gets the lowest number.
TEST_F(ProgramUnharmed, ClosingEveryDescriptorThenWritingItsOwnFile) {
  run_both("close-fds", {std::to_string(kOwnFileBytes), std::to_string(kPairs)});
  EXPECT_EQ(file_size(dir_ + "/traced.out"), kOwnFileBytes + 16);
  const json rep = report({only_trace()});
  // The recorder opened its file again by its name: nothing was lost.
  EXPECT_EQ(rep["traces"][0]["end"], "exited") << rep.dump();
  EXPECT_EQ(rep["traces"][0]["truncated"], false);
  const json& d = device(rep, 0);
  EXPECT_EQ(number(d, "alloc_count"), kPairs + 1);
  EXPECT_EQ(number(d, "free_count"), kPairs);
  EXPECT_EQ(number(d, "live_at_exit_bytes"), static_cast<int64_t>(kMiB));
}

// The recorder's own threads open no descriptor: while the program sleeps with none free, the
// sampler (every millisecond) fills its chunk and needs another, which it takes from the spare a
// program's thread mapped ahead instead of opening the trace again (that open failed, and
// recording stopped).
TEST_F(ProgramUnharmed, TheSamplerOpensNothingWhileTheProgramHoldsEveryDescriptor) {
  const std::map<std::string, std::string> env = {{"GPUMEMTRACE_SAMPLE_MS", "1"}};
  const ProcessResult traced = run_both("close-wait", {"2500", "1000"}, env);
  EXPECT_NE(traced.out.find("fd=3\n"), std::string::npos) << traced.out;
  const json rep = report({only_trace()});
  EXPECT_EQ(rep["traces"][0]["end"], "exited") << rep.dump();
  const json& d = device(rep, 0);
  EXPECT_EQ(number(d, "alloc_count"), 1001);
  EXPECT_EQ(number(d, "free_count"), 1000);
}

// The same race as a stress loop: a program that closes everything and opens its file, over
// and over, while the sampler records every millisecond, always gets descriptor 3.
TEST_F(ProgramUnharmed, ClosingAndOpeningOverAndOverAlwaysGetsTheLowestNumber) {
  const std::map<std::string, std::string> env = {{"GPUMEMTRACE_SAMPLE_MS", "1"}};
  const ProcessResult traced = run_both("close-often", {"100000"}, env);
  EXPECT_EQ(traced.out, "other_descriptor=0\nstatus=ok\n");
  const json rep = report({only_trace()});
  EXPECT_EQ(rep["traces"][0]["end"], "exited") << rep.dump();
}

TEST_F(ProgramUnharmed, CloseRangeThenWritingItsOwnFile) {
  run_both("close-range", {std::to_string(kOwnFileBytes), std::to_string(kPairs)});
  const json rep = report({only_trace()});
  EXPECT_EQ(rep["traces"][0]["end"], "exited") << rep.dump();
  EXPECT_EQ(number(device(rep, 0), "alloc_count"), kPairs + 1);
  EXPECT_EQ(number(device(rep, 0), "free_count"), kPairs);
}

// A 13-byte file of the program's at the trace's old number: growing the trace through that
// number would extend it, and mapping it raised SIGBUS.
TEST_F(ProgramUnharmed, ClosingEveryDescriptorWithASmallFileOfItsOwn) {
  run_both("close-fds", {"13", std::to_string(kPairs)});
  EXPECT_EQ(file_size(dir_ + "/traced.out"), 13u + 16u);
  const json rep = report({only_trace()});
  EXPECT_EQ(rep["traces"][0]["end"], "exited") << rep.dump();
  EXPECT_EQ(number(device(rep, 0), "alloc_count"), kPairs + 1);
}

// The program puts its own file at the trace's descriptor number.
TEST_F(ProgramUnharmed, Dup2OntoTheTraceDescriptor) {
  const ProcessResult traced =
      run_both("dup2", {std::to_string(kOwnFileBytes), std::to_string(kPairs)});
  EXPECT_EQ(printed(traced.err, "dup2_onto_trace"), 1) << "the program found the trace's number";
  const json rep = report({only_trace()});
  EXPECT_EQ(rep["traces"][0]["end"], "exited") << rep.dump();
  EXPECT_EQ(number(device(rep, 0), "alloc_count"), kPairs + 1);
  EXPECT_EQ(number(device(rep, 0), "free_count"), kPairs);
}

// `ulimit -f` below what the trace would reach: the program is not killed by SIGXFSZ, the trace
// stays under the limit and says that recording stopped there.
TEST_F(ProgramUnharmed, FileSizeLimitBelowTheTraceSize) {
  constexpr uint64_t kLimit = 300 * 1024;
  const ProcessResult traced = run_both("fsize", {std::to_string(kLimit), std::to_string(kPairs)});
  EXPECT_NE(traced.out.find("write_past_limit=-1 errno=EFBIG"), std::string::npos) << traced.out;
  const std::string trace = only_trace();
  EXPECT_LE(file_size(trace), kLimit);
  const json rep = report({trace});
  const json& t = rep["traces"][0];
  EXPECT_EQ(t["end"], "stopped") << rep.dump();
  EXPECT_EQ(t["truncated"], false);
  EXPECT_NE(t["end_reason"].get<std::string>().find("RLIMIT_FSIZE, 307200 bytes"),
            std::string::npos)
      << t["end_reason"];
  EXPECT_GT(number(t, "end_time_ns"), 0);
  const int64_t allocs = number(device(rep, 0), "alloc_count");
  EXPECT_GT(allocs, 1000);
  EXPECT_LT(allocs, kPairs);
  const ProcessResult info = cli({"info", trace});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("stopped at "), std::string::npos) << info.out;
}

// A full disk, by the writer's test seam: the first growth (1 MiB) does not fit, a smaller one
// does, and when that is full recording stops with a note; the program never notices.
TEST_F(ProgramUnharmed, FullDiskStopsRecordingWithANote) {
  constexpr uint64_t kFull = 300 * 1024;
  run_both("loop", {"4096", std::to_string(kPairs)},
           {{"GPUMEMTRACE_TEST_ENOSPC_AT", std::to_string(kFull)}});
  const std::string trace = only_trace();
  EXPECT_LE(file_size(trace), kFull);
  const json rep = report({trace});
  const json& t = rep["traces"][0];
  EXPECT_EQ(t["end"], "stopped") << rep.dump();
  EXPECT_EQ(t["truncated"], false);
  // 4 chunks of 64 KiB after the header were all the disk held.
  EXPECT_EQ(t["end_reason"], "the disk is full (No space left on device) at byte 266240");
  EXPECT_GT(number(t, "end_time_ns"), 0);
  const int64_t allocs = number(device(rep, 0), "alloc_count");
  EXPECT_GT(allocs, 1000);
  EXPECT_LT(allocs, kPairs);
  bool noted = false;
  for (const auto& note : t["notes"]) {
    noted = noted || note ==
                         "recording stopped: the disk is full (No space left on device) at "
                         "byte 266240";
  }
  EXPECT_TRUE(noted) << t["notes"].dump();
  const ProcessResult text = cli({"report", trace});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("recording stopped at "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("disk is full"), std::string::npos) << text.out;
}

// No room for even one chunk: the file holds only its header, which says why. Every command
// reads it as a recording that failed, not as a file it cannot read.
TEST_F(ProgramUnharmed, NoRoomForTheFirstChunkLeavesTheReasonInTheHeader) {
  run_both("loop", {"4096", "1000"}, {{"GPUMEMTRACE_TEST_ENOSPC_AT", "8192"}});
  const std::string trace = only_trace();
  EXPECT_EQ(file_size(trace), 4096u);
  const json rep = report({trace});
  const json& t = rep["traces"][0];
  EXPECT_EQ(t["end"], "failed") << rep.dump();
  EXPECT_EQ(t["end_reason"], "the disk is full (No space left on device) at byte 4096");
  EXPECT_EQ(number(t, "events"), 0);
  const ProcessResult text = cli({"report", trace});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("recording failed: the disk is full"), std::string::npos) << text.out;
  const ProcessResult info = cli({"info", trace});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("recording failed: the disk is full"), std::string::npos) << info.out;
}

// A child that execs ends its trace by exec, not "cut"; the exec'd program (no CUDA) writes
// none, and the parent's trace is complete.
TEST_F(ProgramUnharmed, ForkThenExecInTheChild) {
  const ProcessResult traced = run_both("fork-exec", {});
  EXPECT_NE(traced.out.find("child_exit=0"), std::string::npos) << traced.out;
  EXPECT_EQ(read_file(dir_ + "/traced.out"), "exec target ran\n");
  const auto found = traces();
  ASSERT_EQ(found.size(), 2u);
  const json rep = report(found);
  int parent = -1;
  int child = -1;
  for (int i = 0; i < 2; ++i) {
    (rep["traces"][i]["end"] == "exec" ? child : parent) = i;
  }
  ASSERT_GE(child, 0) << rep.dump();
  ASSERT_GE(parent, 0) << rep.dump();
  EXPECT_EQ(rep["traces"][parent]["end"], "exited");
  EXPECT_EQ(rep["traces"][child]["exec"], "/proc/self/exe");
  EXPECT_GT(number(rep["traces"][child], "end_time_ns"), 0);
  EXPECT_EQ(number(rep["traces"][child], "ppid"), number(rep["traces"][parent], "pid"));
  EXPECT_EQ(number(device(rep, child, 0), "alloc_count"), 1);
  EXPECT_EQ(number(device(rep, child, 0), "live_at_exit_bytes"), static_cast<int64_t>(2 * kMiB));
  EXPECT_EQ(number(device(rep, parent, 0), "alloc_count"), 1);
}

// An exec that fails returns: the trace says so and recording goes on to a normal exit.
TEST_F(ProgramUnharmed, FailedExecRecordingGoesOn) {
  run_both("exec-fail", {});
  const json rep = report({only_trace()});
  const json& t = rep["traces"][0];
  EXPECT_EQ(t["end"], "exited") << rep.dump();
  EXPECT_EQ(number(device(rep, 0), "alloc_count"), 2);
  const json expected_notes = {"exec: /nonexistent/gpumemtrace-no-such-program",
                               "exec failed: No such file or directory; recording goes on"};
  EXPECT_EQ(t["notes"], expected_notes);
}

// A program that opens the library itself (dlopen, here through ctypes) gets it: the thread-local
// state that its initial-exec model puts in the static TLS block, where a library opened late
// has little room, stays small.
TEST_F(ProgramUnharmed, TheLibraryOpensWithDlopen) {
  if (system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not installed";
  ProcessSpec spec;
  spec.argv = {"/usr/bin/env", "python3", "-c",
               "import ctypes, sys; ctypes.CDLL(sys.argv[1]); print('opened')", GMT_PRELOAD};
  spec.set_env = base_env();
  // The library alone is opened; a sanitizer's runtime must still come first in the process.
  if (!sanitizer_runtime().empty()) spec.set_env["LD_PRELOAD"] = sanitizer_runtime();
  spec.cwd = dir_;
  const ProcessResult r = run_process(spec);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "opened\n") << r.err;
}

// A storm of SIGALRM whose handler allocates (whenever the main thread is not inside a CUDA
// call: the driver's locks would deadlock it, traced or not), while the main thread allocates
// in a loop: every allocation of both is in the trace, whole, and the program runs as untraced.
// (A hook entered while its thread is inside the writer: trace_writer_safety_test.cpp.)
TEST_F(ProgramUnharmed, SignalHandlerThatAllocatesDuringAnAllocationLoop) {
  constexpr int kStormPairs = 20000;
  const ProcessResult traced = run_both("signals", {std::to_string(kStormPairs)});
  EXPECT_GT(printed(traced.err, "handler_calls"), 0);
  const int64_t handler_allocations = printed(traced.err, "handler_allocations");
  EXPECT_GT(handler_allocations, 0);
  const json rep = report({only_trace()});
  const json& t = rep["traces"][0];
  EXPECT_EQ(t["end"], "exited") << rep.dump();
  EXPECT_EQ(t["truncated"], false);
  EXPECT_EQ(number(t, "unmatched_frees"), 0);
  EXPECT_FALSE(t.contains("dropped_records"));
  const json& d = device(rep, 0);
  EXPECT_EQ(number(d, "alloc_count"), kStormPairs + handler_allocations);
  EXPECT_EQ(number(d, "free_count"), kStormPairs + handler_allocations);
  EXPECT_EQ(number(d, "live_at_exit_count"), 0);
}

}  // namespace
}  // namespace gmt::test
