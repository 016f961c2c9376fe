// SPDX-License-Identifier: Apache-2.0
// Workloads on the simulated CUDA stack, traced by the preload library, summarized by
// `gpumemtrace report --json`: every expected number below follows from the operations the
// workload is given, by hand.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/integration/traced_run_fixture.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace gmt::test {
namespace {

// The fixture's helpers are shared with the other end-to-end suites (traced_run_fixture.h).
class EndToEnd : public TracedRun {};

// alloc a 1, b 4, free a, c 2, d 8, free b, free d: the peak is b+c+d = 14 MiB, c is live at exit.
const std::vector<std::string> kSequence = {"alloc:a:" + mib(1),
                                            "alloc:b:" + mib(4),
                                            "free:a",
                                            "alloc:c:" + mib(2),
                                            "alloc:d:" + mib(8),
                                            "free:b",
                                            "free:d"};

void expect_sequence_numbers(const json& r) {
  ASSERT_EQ(r["traces"].size(), 1u);
  EXPECT_EQ(r["traces"][0]["events"], 7);
  EXPECT_EQ(r["traces"][0]["truncated"], false);
  EXPECT_EQ(r["traces"][0]["end"], "exited");
  ASSERT_EQ(r["devices"].size(), 1u);
  const json& d = r["devices"][0];
  EXPECT_EQ(d["device"], 0);
  EXPECT_EQ(d["peak_bytes"], 14 * kMiB);
  EXPECT_EQ(d["live_at_exit_bytes"], 2 * kMiB);
  EXPECT_EQ(d["live_at_exit_count"], 1);
  EXPECT_EQ(d["alloc_count"], 4);
  EXPECT_EQ(d["free_count"], 3);
  EXPECT_EQ(d["failed_alloc_count"], 0);
}

class EveryPath : public EndToEnd, public ::testing::WithParamInterface<const char*> {};

TEST_P(EveryPath, KnownSequenceGivesExactPeakAndLiveBytes) {
  const ProcessResult r = run_traced(GetParam(), kSequence);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json rep = report({only_trace()});
  expect_sequence_numbers(rep);
  EXPECT_GT(rep["traces"][0]["pid"].get<int>(), 0);
}

INSTANTIATE_TEST_SUITE_P(Paths, EveryPath,
                         ::testing::Values("workload_runtime_shared", "workload_runtime_static",
                                           "workload_driver_linked", "workload_driver_dlsym",
                                           "workload_driver_procaddress_11030"));

TEST_F(EndToEnd, PeakIsKeptPerDevice) {
  const ProcessResult r =
      run_traced("workload_runtime_shared",
                 {"device:0", "alloc:a:" + mib(1), "device:1", "alloc:b:" + mib(3),
                  "alloc:c:" + mib(5), "free:b", "device:0", "free:a"},
                 {{"FAKECUDA_DEVICE_COUNT", "2"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json rep = report({only_trace()});
  ASSERT_EQ(rep["devices"].size(), 2u);
  const json& d0 = device(rep, 0);
  EXPECT_EQ(d0["peak_bytes"], 1 * kMiB);
  EXPECT_EQ(d0["live_at_exit_bytes"], 0);
  EXPECT_EQ(d0["alloc_count"], 1);
  EXPECT_EQ(d0["free_count"], 1);
  const json& d1 = device(rep, 1);
  EXPECT_EQ(d1["peak_bytes"], 8 * kMiB);
  EXPECT_EQ(d1["live_at_exit_bytes"], 5 * kMiB);
  EXPECT_EQ(d1["live_at_exit_count"], 1);
  EXPECT_EQ(d1["alloc_count"], 2);
  EXPECT_EQ(d1["free_count"], 1);
}

TEST_F(EndToEnd, OutOfMemoryIsRecordedAndTheProgramSeesTheSameError) {
  // alloc_ops itself checks that the "oom" allocation fails, as it would untraced.
  const ProcessResult r =
      run_traced("workload_runtime_shared", {"alloc:a:" + mib(512), "oom:" + mib(1024), "free:a"},
                 {{"FAKECUDA_DEVICE_MEMORY", mib(1024)}, {"FAKECUDA_CONTEXT_OVERHEAD", "0"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json rep = report({only_trace()});
  const json& d = device(rep, 0);
  EXPECT_EQ(d["failed_alloc_count"], 1);
  EXPECT_EQ(d["alloc_count"], 1);
  EXPECT_EQ(d["peak_bytes"], 512 * kMiB);
  EXPECT_EQ(rep["traces"][0]["events"], 3);
}

TEST_F(EndToEnd, ProgramWithoutCudaLeavesNoTraceAndDlsymStillWorks) {
  const ProcessResult r = run_traced("workload_no_cuda", {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // getpid goes through a library that finds the real one with dlsym(RTLD_NEXT): it must reach
  // libc, not loop back into itself.
  EXPECT_NE(r.out.find("getpid_ok=1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cos=1 puts=1 missing_is_null=1"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("layer_calls=0"), std::string::npos) << r.out;
  EXPECT_TRUE(traces().empty());
}

class AbruptEnd : public EndToEnd, public ::testing::WithParamInterface<const char*> {};

TEST_P(AbruptEnd, EverythingRecordedBeforeTheEndIsKept) {
  const ProcessResult r = run_traced(
      "workload_runtime_shared",
      {"alloc:a:" + mib(1), "alloc:b:" + mib(2), "free:a", std::string("exit:") + GetParam()});
  (void)r;
  const json rep = report({only_trace()});
  EXPECT_EQ(rep["traces"][0]["events"], 3);
  EXPECT_EQ(rep["traces"][0]["truncated"], false);
  EXPECT_EQ(rep["traces"][0]["end"], std::string(GetParam()) == "normal" ? "exited" : "cut");
  const json& d = device(rep, 0);
  EXPECT_EQ(d["peak_bytes"], 3 * kMiB);
  EXPECT_EQ(d["live_at_exit_bytes"], 2 * kMiB);
}

INSTANTIATE_TEST_SUITE_P(Endings, AbruptEnd,
                         ::testing::Values("normal", "_exit", "abort", "kill", "segv"));

// A process that dies of a signal leaves it in its trace (the preload's handler, format 4.10),
// with the phases and the pytest plugin's test open then: `info` and `report` say them, in text
// and JSON, and a summary keeps them. The process dies as it would have, of the same signal.
TEST_F(EndToEnd, ACrashTraceSaysTheSignalAndWhatWasOpen) {
  const ProcessResult r =
      run_traced("workload_runtime_shared",
                 {"alloc:a:" + mib(1), "phase:pytest tests/test_x.py::test_y #1", "phase:step 3",
                  "alloc:b:" + mib(2), "exit:fault"},
                 {{"ASAN_OPTIONS", "detect_leaks=0:handle_segv=0"}});
  EXPECT_EQ(r.signal, SIGSEGV) << r.exit_code << " " << r.err;
  const std::string trace = only_trace();
  const std::string segv = "SIGSEGV (segmentation fault at address 0x8)";

  ProcessResult info = cli({"info", trace});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("integrity    cut (the process was ended by " + segv +
                          "; every record up to then is here)\n"),
            std::string::npos)
      << info.out;
  EXPECT_NE(info.out.find("\nsignal       " + segv + " on thread "), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("\nopen at end  test tests/test_x.py::test_y, phase 'step 3'\n"),
            std::string::npos)
      << info.out;
  const json info_json = json::parse(cli({"info", "--json", trace}).out);
  EXPECT_EQ(info_json["integrity"], "cut");
  EXPECT_EQ(info_json["signal"]["name"], "SIGSEGV");
  EXPECT_EQ(info_json["signal"]["number"], SIGSEGV);
  EXPECT_EQ(info_json["signal"]["address"], 8);
  ASSERT_EQ(info_json["open_at_end"].size(), 2u) << info_json.dump(1);
  EXPECT_EQ(info_json["open_at_end"][0]["test"], "tests/test_x.py::test_y");
  EXPECT_EQ(info_json["open_at_end"][1]["name"], "step 3");
  EXPECT_EQ(info_json["open_at_end"][1]["test"], nullptr);

  const ProcessResult text = cli({"report", trace});
  EXPECT_NE(text.out.find("(the process was ended by " + segv + " at "), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("\n  open at end   test tests/test_x.py::test_y, phase 'step 3'\n"),
            std::string::npos)
      << text.out;
  const json rep = report({trace});
  EXPECT_EQ(rep["traces"][0]["end"], "cut");
  EXPECT_EQ(rep["traces"][0]["signal"]["name"], "SIGSEGV");
  EXPECT_EQ(rep["traces"][0]["open_at_end"], info_json["open_at_end"]);

  // A summary keeps them.
  const std::string summary = dir_ + "/s.json";
  ASSERT_EQ(cli({"summarize", trace, "-o", summary}).exit_code, 0);
  const json from_summary = report({summary});
  EXPECT_EQ(from_summary["traces"][0]["signal"], rep["traces"][0]["signal"]);
  EXPECT_EQ(from_summary["traces"][0]["open_at_end"], rep["traces"][0]["open_at_end"]);
}

// abort() is the process's own signal; SIGKILL leaves no record (no handler sees it), and the
// trace says only that the process did not exit normally; a normal exit names no signal.
TEST_F(EndToEnd, TheSignalSaysWhoSentIt) {
  ASSERT_EQ(run_traced("workload_runtime_shared", {"alloc:a:" + mib(1), "exit:abort"},
                       {{"GPUMEMTRACE_OUTPUT", dir_ + "/abort.gmt"}})
                .signal,
            SIGABRT);
  json rep = report({dir_ + "/abort.gmt"});
  EXPECT_EQ(rep["traces"][0]["signal"]["name"], "SIGABRT");
  EXPECT_EQ(rep["traces"][0]["signal"]["sender"], rep["traces"][0]["pid"]);
  EXPECT_NE(cli({"info", dir_ + "/abort.gmt"})
                .out.find("cut (the process was ended by SIGABRT (aborted, raised by the process "
                          "itself); every record up to then is here)"),
            std::string::npos);

  ASSERT_EQ(run_traced("workload_runtime_shared", {"alloc:a:" + mib(1), "exit:kill"},
                       {{"GPUMEMTRACE_OUTPUT", dir_ + "/kill.gmt"}})
                .signal,
            SIGKILL);
  rep = report({dir_ + "/kill.gmt"});
  EXPECT_EQ(rep["traces"][0]["end"], "cut");
  EXPECT_EQ(rep["traces"][0]["signal"], nullptr);
  EXPECT_NE(cli({"info", dir_ + "/kill.gmt"})
                .out.find("integrity    cut (the process did not exit normally; every record up "
                          "to then is here)\n"),
            std::string::npos);

  ASSERT_EQ(run_traced("workload_runtime_shared", {"alloc:a:" + mib(1), "phase:open"},
                       {{"GPUMEMTRACE_OUTPUT", dir_ + "/normal.gmt"}})
                .exit_code,
            0);
  rep = report({dir_ + "/normal.gmt"});
  EXPECT_EQ(rep["traces"][0]["end"], "exited");
  EXPECT_EQ(rep["traces"][0]["signal"], nullptr);
  EXPECT_EQ(cli({"info", dir_ + "/normal.gmt"}).out.find("open at end"), std::string::npos);
}

TEST_F(EndToEnd, ForkedChildWritesItsOwnTrace) {
  const ProcessResult r =
      run_traced("workload_runtime_shared", {"alloc:a:" + mib(1), "fork:" + mib(8), "free:a"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto found = traces();
  ASSERT_EQ(found.size(), 2u);
  const json rep = report(found);
  ASSERT_EQ(rep["devices"].size(), 2u);
  int parent = -1;
  for (int i = 0; i < 2; ++i) {
    if (rep["traces"][i]["argv"].size() > 1 && rep["devices"][i]["peak_bytes"] == 1 * kMiB)
      parent = i;
  }
  ASSERT_NE(parent, -1) << rep.dump();
  const int child = 1 - parent;
  EXPECT_EQ(rep["devices"][parent]["alloc_count"], 1);
  EXPECT_EQ(rep["devices"][parent]["free_count"], 1);
  EXPECT_EQ(rep["devices"][child]["peak_bytes"], 8 * kMiB);
  EXPECT_EQ(rep["devices"][child]["alloc_count"], 1);
  EXPECT_EQ(rep["devices"][child]["free_count"], 1);
  EXPECT_NE(rep["traces"][0]["pid"], rep["traces"][1]["pid"]);
}

TEST_F(EndToEnd, ConcurrentThreadsKeepFreesAndReusedAddressesInOrder) {
  // The simulated driver hands a freed address straight to the next allocation: any record
  // written out of order shows up as an unmatched free or a lost allocation.
  const ProcessResult r = run_traced("workload_runtime_shared", {"threads:4:500:" + mib(1)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json rep = report({only_trace()});
  EXPECT_EQ(rep["traces"][0]["events"], 4000);
  EXPECT_EQ(rep["traces"][0]["unmatched_frees"], 0);
  const json& d = device(rep, 0);
  EXPECT_EQ(d["alloc_count"], 2000);
  EXPECT_EQ(d["free_count"], 2000);
  EXPECT_EQ(d["live_at_exit_bytes"], 0);
  EXPECT_GE(d["peak_bytes"].get<uint64_t>(), 1 * kMiB);
  EXPECT_LE(d["peak_bytes"].get<uint64_t>(), 4 * kMiB);
}

TEST_F(EndToEnd, RunCommandTracesAndPassesTheExitCodeThrough) {
  std::map<std::string, std::string> env = base_env();
  env.erase("GPUMEMTRACE_OUTPUT");
  if (!sanitizer_runtime().empty()) env["LD_PRELOAD"] = sanitizer_runtime();
  std::vector<std::string> args = {"run", "-o", "run.%p.gmt", "--",
                                   workload("workload_runtime_shared")};
  args.insert(args.end(), kSequence.begin(), kSequence.end());
  const ProcessResult ok = cli(args, env);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const std::string trace = only_trace();
  EXPECT_EQ(fs::path(trace).filename().string().rfind("run.", 0), 0u) << trace;
  EXPECT_NE(ok.err.find(trace), std::string::npos) << ok.err;
  EXPECT_NE(ok.err.find("gpumemtrace report"), std::string::npos) << ok.err;
  expect_sequence_numbers(report({trace}));

  // A failing program's status comes back unchanged (alloc_ops exits 3 on a bad operation)...
  const ProcessResult failed =
      cli({"run", "--", workload("workload_runtime_shared"), "free:nothing"}, env);
  EXPECT_EQ(failed.exit_code, 3) << failed.err;
  // ...and so does death by a signal.
  const ProcessResult killed = cli(
      {"run", "--", workload("workload_runtime_shared"), "alloc:a:" + mib(1), "exit:kill"}, env);
  EXPECT_EQ(killed.signal, SIGKILL) << killed.err;
}

// --stacks reaches the program: with `none` no stack is recorded, by default (all) one is.
TEST_F(EndToEnd, RunCommandSetsTheStackMode) {
  std::map<std::string, std::string> env = base_env();
  env.erase("GPUMEMTRACE_OUTPUT");
  env.erase("GPUMEMTRACE_STACKS");
  if (!sanitizer_runtime().empty()) env["LD_PRELOAD"] = sanitizer_runtime();
  for (const std::string mode : {"none", ""}) {
    std::vector<std::string> args = {"run", "-o",
                                     "stacks-" + (mode.empty() ? "default" : mode) + ".%p.gmt"};
    if (!mode.empty()) args.insert(args.end(), {"--stacks", mode});
    args.insert(args.end(), {"--", workload("workload_runtime_shared"), "alloc:a:" + mib(1)});
    const ProcessResult r = cli(args, env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const ProcessResult none =
      cli({"info", "--json", dir_ + "/" + fs::path(traces()[1]).filename().string()});
  const ProcessResult all =
      cli({"info", "--json", dir_ + "/" + fs::path(traces()[0]).filename().string()});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(json::parse(none.out)["stacks"], 0) << traces()[1];
  EXPECT_EQ(json::parse(all.out)["stacks"], 1) << traces()[0];
}

TEST_F(EndToEnd, RunCommandSaysWhenNoTraceWasWritten) {
  std::map<std::string, std::string> env = base_env();
  if (!sanitizer_runtime().empty()) env["LD_PRELOAD"] = sanitizer_runtime();
  const ProcessResult r = cli({"run", "--", workload("workload_no_cuda")}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("no trace was written"), std::string::npos) << r.err;
  EXPECT_TRUE(traces().empty());
}

// The offsets of the chunks in a trace (format/README.md): after the 4 KiB header page, 64 KiB
// each, starting with the magic "GMTC".
std::vector<uint64_t> chunk_offsets(const std::string& trace) {
  std::ifstream in(trace, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<uint64_t> offsets;
  for (uint64_t off = 4096; off + 4 <= bytes.size(); off += 64 * 1024) {
    if (bytes.compare(off, 4, "GMTC") == 0) offsets.push_back(off);
  }
  return offsets;
}

// The main thread runs the known sequence (its chunk comes first), then one worker thread makes
// three allocate/free pairs in a chunk of its own, then the process is killed.
std::vector<std::string> two_chunk_ops() {
  std::vector<std::string> ops = kSequence;
  ops.push_back("threads:1:3:" + mib(1));
  ops.push_back("exit:kill");
  return ops;
}

TEST_F(EndToEnd, TruncatedTraceKeepsEveryCompleteChunkAndSaysWhere) {
  // No sampler: its thread would write a third chunk.
  run_traced("workload_runtime_shared", two_chunk_ops(), {{"GPUMEMTRACE_SAMPLE_MS", "0"}});
  const std::string trace = only_trace();
  const std::vector<uint64_t> chunks = chunk_offsets(trace);
  ASSERT_EQ(chunks.size(), 2u);
  const std::string cut = dir_ + "/cut.bin";
  fs::copy_file(trace, cut);
  fs::resize_file(cut, chunks[1] + 32 + 5);  // inside the worker's records
  const ProcessResult r = cli({"report", "--json", cut});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json rep = json::parse(r.out);
  EXPECT_EQ(rep["traces"][0]["truncated"], true);
  EXPECT_EQ(rep["traces"][0]["end"], "truncated");
  EXPECT_EQ(rep["traces"][0]["events"], 7);
  EXPECT_EQ(rep["traces"][0]["end_offset"], chunks[1]);
  EXPECT_NE(r.err.find(cut + ": left out at byte " + std::to_string(chunks[1]) +
                       ": the file ends inside a chunk of thread"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(device(rep, 0)["peak_bytes"], 14 * kMiB);
  EXPECT_EQ(device(rep, 0)["live_at_exit_bytes"], 2 * kMiB);
}

TEST_F(EndToEnd, AFlippedByteLosesOnlyTheChunkItIsIn) {
  // No sampler: its thread would write a third chunk.
  run_traced("workload_runtime_shared", two_chunk_ops(), {{"GPUMEMTRACE_SAMPLE_MS", "0"}});
  const std::string trace = only_trace();
  const std::vector<uint64_t> chunks = chunk_offsets(trace);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(report({trace})["traces"][0]["events"], 13);  // intact: both chunks
  {
    std::fstream f(trace, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(chunks[1] + 32 + 2));
    const char c = static_cast<char>(f.get());
    f.seekp(static_cast<std::streamoff>(chunks[1] + 32 + 2));
    f.put(static_cast<char>(c ^ 0x10));
  }
  const ProcessResult r = cli({"report", "--json", trace});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json rep = json::parse(r.out);
  EXPECT_EQ(rep["traces"][0]["end"], "corrupt");
  EXPECT_EQ(rep["traces"][0]["events"], 7);
  EXPECT_NE(r.err.find("checksum mismatch in a chunk of thread"), std::string::npos) << r.err;
  EXPECT_EQ(device(rep, 0)["peak_bytes"], 14 * kMiB);
}

TEST_F(EndToEnd, UnreadableFilesGetAClearErrorAndTheOthersAreStillReported) {
  ASSERT_EQ(run_traced("workload_runtime_shared", kSequence).exit_code, 0);
  const std::string good = only_trace();
  const std::string text = dir_ + "/notes.txt";
  std::ofstream(text) << "this is not a trace\n";
  const std::string empty = dir_ + "/empty.gmt.bin";
  std::ofstream(empty).close();
  const ProcessResult r = cli({"report", "--json", good, text, empty, dir_ + "/missing.gmt"});
  EXPECT_EQ(r.exit_code, 1);
  const json rep = json::parse(r.out);
  ASSERT_EQ(rep["traces"].size(), 1u);
  EXPECT_EQ(device(rep, 0)["peak_bytes"], 14 * kMiB);
  ASSERT_EQ(rep["errors"].size(), 3u);
  EXPECT_NE(r.err.find(text + ": not a gpumemtrace trace"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(empty + ": the file is empty"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("missing.gmt: cannot open"), std::string::npos) << r.err;
}

TEST_F(EndToEnd, UnwritableOutputWarnsOnceAndTheProgramRunsNormally) {
  const ProcessResult r = run_traced("workload_runtime_shared", kSequence,
                                     {{"GPUMEMTRACE_OUTPUT", dir_ + "/no/such/dir/t.%p.gmt"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string needle = "gpumemtrace: cannot create trace file";
  const auto first = r.err.find(needle);
  ASSERT_NE(first, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(needle, first + 1), std::string::npos) << r.err;
}

TEST_F(EndToEnd, TheTraceNamesTheThreadsThatAllocated) {
  const ProcessResult r =
      run_traced("workload_runtime_shared", {"alloc:a:" + mib(1), "threads:2:3:" + mib(1)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json rep = report({only_trace()});
  std::vector<std::string> names;
  for (const json& t : rep["traces"][0]["threads"]) names.push_back(t["name"]);
  std::sort(names.begin(), names.end());
  // The main thread carries the program's name, cut to 15 characters by the kernel; the
  // sampler's thread, which always writes a last sample at exit, is "gpumemtrace".
  EXPECT_EQ(names,
            (std::vector<std::string>{"gpumemtrace", "worker-0", "worker-1", "workload_runtim"}));
  EXPECT_EQ(rep["traces"][0]["threads"][0]["tid"].get<int>() > 0, true);
}

TEST_F(EndToEnd, OnlyTheChunksBeingWrittenStayMapped) {
  // 40 threads come and go, then two threads each fill several chunks with 12 000 pairs. No
  // sampler thread, whose chunk would stay mapped for as long as it runs.
  const ProcessResult r = run_traced("workload_runtime_shared",
                                     {"threads:40:5:" + mib(1), "threads:1:12000:4096",
                                      "alloc:a:" + mib(1), "threads:1:12000:4096", "trace_maps"},
                                     {{"GPUMEMTRACE_SAMPLE_MS", "0"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Only the main thread writes now (its one chunk); every ended thread gave its chunk back. The
  // other mapping is the header page, where the writer keeps where its chunks end (format 4.9).
  EXPECT_EQ(printed(r.out, "trace_maps"), 2);
  const json rep = report({only_trace()});
  EXPECT_EQ(rep["traces"][0]["events"], 400 + 48000 + 1);
  EXPECT_EQ(rep["traces"][0]["unmatched_frees"], 0);
}

TEST_F(EndToEnd, TraceFilesAreReadableByTheirOwnerOnly) {
  ASSERT_EQ(run_traced("workload_runtime_shared", kSequence).exit_code, 0);
  struct stat st {};
  ASSERT_EQ(stat(only_trace().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(EndToEnd, OutputPatternNamesHostRankAndPid) {
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  const ProcessResult r =
      run_traced("workload_runtime_shared", kSequence,
                 {{"GPUMEMTRACE_OUTPUT", dir_ + "/%h-rank%r-%p.gmt"}, {"RANK", "3"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string name = fs::path(only_trace()).filename().string();
  const std::string prefix = std::string(host) + "-rank3-";
  EXPECT_EQ(name.rfind(prefix, 0), 0u) << name;
  const json rep = report({only_trace()});
  EXPECT_EQ(name, prefix + std::to_string(rep["traces"][0]["pid"].get<int>()) + ".gmt");
}

TEST_F(EndToEnd, ASymlinkInPlaceOfTheTraceIsNotFollowed) {
  // Someone plants a link where the trace will go: the link's target must stay untouched.
  const std::string target = dir_ + "/victim.txt";
  std::ofstream(target) << "keep me";
  fs::create_symlink(target, dir_ + "/planted.gmt");
  ASSERT_EQ(run_traced("workload_runtime_shared", kSequence,
                       {{"GPUMEMTRACE_OUTPUT", dir_ + "/planted.gmt"}})
                .exit_code,
            0);
  std::ifstream in(target);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()),
            "keep me");
  bool found = false;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    // The name taken, the pid goes before the extension: planted.<pid>.gmt.
    const std::string name = entry.path().filename().string();
    if (name.rfind("planted.", 0) == 0 && name != "planted.gmt" && name.ends_with(".gmt")) {
      found = true;
      expect_sequence_numbers(report({entry.path().string()}));
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(EndToEnd, ExistingFileIsNeverOverwritten) {
  std::map<std::string, std::string> env = {{"GPUMEMTRACE_OUTPUT", dir_ + "/fixed.gmt"}};
  std::ofstream(dir_ + "/fixed.gmt") << "precious";
  ASSERT_EQ(run_traced("workload_runtime_shared", kSequence, env).exit_code, 0);
  std::ifstream in(dir_ + "/fixed.gmt");
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "precious");
  // The new trace got the pid before its extension instead: fixed.<pid>.gmt.
  bool found_new = false;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("fixed.", 0) == 0 && name != "fixed.gmt" && name.ends_with(".gmt")) {
      found_new = true;
      const json rep = report({entry.path().string()});
      EXPECT_EQ(name, "fixed." + std::to_string(rep["traces"][0]["pid"].get<int>()) + ".gmt");
      expect_sequence_numbers(rep);
    }
  }
  EXPECT_TRUE(found_new);
}

TEST_F(EndToEnd, TextReportShowsThePeak) {
  ASSERT_EQ(run_traced("workload_runtime_shared", kSequence).exit_code, 0);
  const ProcessResult r = cli({"report", only_trace()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("peak          14.0 MiB (14680064 bytes)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("live at exit  2.00 MiB in 1 allocation"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("allocations   4, frees 3, failed 0"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace gmt::test
