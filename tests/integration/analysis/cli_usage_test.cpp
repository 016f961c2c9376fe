// SPDX-License-Identifier: Apache-2.0
// The command line's rough edges (issue #23): usage errors, --help and --version, directories of
// traces, `run`'s messages and listing, and text that reads right.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "tests/integration/analysis/html_report_fixture.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace gmt::test {
namespace {

class CliUsage : public HtmlReportRun {
 protected:
  // Every trace under dir_, in folders too, renamed ones (NAME.<pid>.gmt, and NAME.gmt.<pid> of
  // older versions) included; sorted.
  std::vector<std::string> all_traces() const {
    std::vector<std::string> found;
    for (const auto& entry : fs::recursive_directory_iterator(dir_)) {
      const std::string name = entry.path().filename().string();
      const std::size_t at = name.find(".gmt");
      if (entry.is_regular_file() && at != std::string::npos &&
          (at + 4 == name.size() || name[at + 4] == '.')) {
        found.push_back(entry.path().string());
      }
    }
    std::sort(found.begin(), found.end());
    return found;
  }

  // One trace of a small workload, at `name` in dir_ (or where the library put it when the
  // name was taken); its path.
  std::string trace_named(const std::string& name, std::vector<std::string> ops = {}) {
    if (ops.empty()) ops = {"alloc:a:" + mib(2)};
    const auto before = all_traces();
    const ProcessResult r =
        run_traced("workload_runtime_shared", ops, {{"GPUMEMTRACE_OUTPUT", dir_ + "/" + name}});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (const std::string& t : all_traces()) {
      if (std::find(before.begin(), before.end(), t) == before.end()) return t;
    }
    ADD_FAILURE() << "no new trace";
    return "";
  }

  // `program` run by hand under the preload, as a user would, in dir_.
  ProcessResult run_program_traced(const std::string& program) const {
    ProcessSpec spec;
    spec.argv = {program, "alloc:a:" + mib(1)};
    spec.set_env = base_env();
    spec.set_env["LD_PRELOAD"] = preload();
    spec.cwd = dir_;
    return run_process(spec);
  }

  std::map<std::string, std::string> run_env() const {
    std::map<std::string, std::string> env = base_env();
    env.erase("GPUMEMTRACE_OUTPUT");
    if (!sanitizer_runtime().empty()) env["LD_PRELOAD"] = sanitizer_runtime();
    return env;
  }

  static void write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
};

TEST_F(CliUsage, EveryUsageErrorExitsTwoAndSaysWhatWasExpected) {
  const std::string t = trace_named("t.gmt");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"peak", t, "--top", "-1"},
       "gpumemtrace: --top: expected a positive whole number, got '-1'"},
      {{"peak", t, "--top", "abc"},
       "gpumemtrace: --top: expected a positive whole number, got 'abc'"},
      {{"peak", t, "--top", "0"}, "gpumemtrace: --top: expected a positive whole number, got '0'"},
      {{"peak", t, "--device", "x"},
       "gpumemtrace: --device: expected a device number (0, 1, ...), got 'x'"},
      {{"timeline", t, "--resolution", "nan"},
       "gpumemtrace: --resolution: expected a number of milliseconds above 0 and at most 1e12, "
       "got 'nan'"},
      {{"timeline", t, "--resolution", "1e308"},
       "gpumemtrace: --resolution: expected a number of milliseconds above 0 and at most 1e12, "
       "got '1e308'"},
      {{"check", t, "--max-peak", "1.5"},
       "gpumemtrace: --max-peak: expected a size (4096, 512MiB, 8.04 GiB, 8g), got '1.5'"},
      {{"check", t, "--max-leak", "8 parsecs"},
       "gpumemtrace: --max-leak: expected a size (4096, 512MiB, 8.04 GiB, 8g), got '8 parsecs'"},
      {{"export", t, "--format", "pprof", "-o", "-", "--what", "leaks"},
       "gpumemtrace: --what applies to --format folded only, not pprof"},
      {{"export", t, "--format", "perfetto", "-o", "-", "--what", "peak"},
       "gpumemtrace: --what applies to --format folded only, not perfetto"},
      // What CLI11 finds wrong, in our words, naming the option or argument.
      {{"diff", t}, "gpumemtrace: missing AFTER (Trace after the change)"},
      {{"export", t, "-o", "-"}, "gpumemtrace: missing --format (Output format)"},
      {{"peak", t, "--device", "0", "--device", "1"},
       "gpumemtrace: --device: given 2 times; give it once"},
      {{"peak", t, "extra"}, "gpumemtrace: unexpected argument: extra"},
      {{"top", "--once", "--pid", "live/"},
       "gpumemtrace: --pid: expected a positive whole number, got 'live/'"},
      {{"top", "--once", "--pid", "-5"},
       "gpumemtrace: --pid: expected a positive whole number, got '-5'"},
      {{"top", "--once", "--pid", "0"},
       "gpumemtrace: --pid: expected a positive whole number, got '0'"},
  };
  for (const auto& [args, message] : cases) {
    const ProcessResult r = cli(args);
    std::string command;
    for (const std::string& arg : args) command += arg + " ";
    EXPECT_EQ(r.exit_code, 2) << command << ": " << r.err;
    EXPECT_EQ(r.err.substr(0, r.err.find('\n')), message);
    EXPECT_EQ(r.out, "");
  }
  // What CLI11 finds wrong exits 2 too: a missing argument, an unknown option, a bad choice.
  for (const std::vector<std::string>& args : {std::vector<std::string>{"report"},
                                               {"peak", t, "--frobnicate"},
                                               {"peak", t, "--by", "x"},
                                               {"timeline", t, "--format", "xml"},
                                               {"--frobnicate"},
                                               {}}) {
    const ProcessResult r = cli(args);
    EXPECT_EQ(r.exit_code, 2) << (args.empty() ? "" : args[0]) << ": " << r.err;
    EXPECT_EQ(r.err.rfind("gpumemtrace: ", 0), 0u) << r.err;
  }
  // A fractional size is fine when it comes to whole bytes.
  EXPECT_EQ(cli({"check", t, "--max-peak", "1.5G"}).exit_code, 0);
}

TEST_F(CliUsage, AnUnknownCommandIsNamedWithTheList) {
  const ProcessResult r = cli({"bogus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("gpumemtrace: unknown command 'bogus'\ncommands:\n  run ", 0), 0u) << r.err;
  for (const char* command : {"report", "peak", "timeline", "export", "html"}) {
    EXPECT_NE(r.err.find(std::string("\n  ") + command + " "), std::string::npos) << command;
  }
}

TEST_F(CliUsage, HelpAndVersionExitZero) {
  const ProcessResult version = cli({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_TRUE(std::regex_match(version.out, std::regex("gpumemtrace [0-9]+\\.[0-9]+\\.[0-9]+\n")))
      << version.out;
  for (const char* flag : {"--help", "-h"}) {
    const ProcessResult run = cli({"run", flag});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(run.out.rfind("usage: gpumemtrace run [-o PATTERN] [--stacks "
                            "none|native|python|all] [--max-size SIZE] [--jax-allocator KIND] "
                            "[--] CMD ARGS...\n",
                            0),
              0u)
        << run.out;
    EXPECT_EQ(run.err, "");
  }
  // Options show their defaults; commands that take directories say so.
  const ProcessResult peak = cli({"peak", "--help"});
  EXPECT_EQ(peak.exit_code, 0);
  EXPECT_NE(peak.out.find("--top UINT=10 "), std::string::npos) << peak.out;
  EXPECT_NE(peak.out.find("--by TEXT:{stack,library}=stack"), std::string::npos) << peak.out;
  for (const char* command : {"report", "html"}) {
    const ProcessResult help = cli({command, "--help"});
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_NE(help.out.find("Trace files, or directories of them"), std::string::npos) << help.out;
  }
}

// A directory holds traces under their own names and renamed ones (`NAME.<pid>.gmt`, written when
// the name was taken); a file that only has a trace's name is not one of them.
TEST_F(CliUsage, DirectoriesReadRenamedTracesAndSkipFilesThatAreNotTraces) {
  const std::string dir = dir_ + "/traces";
  fs::create_directory(dir);
  write(dir + "/blocker.gmt", "not a trace\n");
  const std::string renamed = trace_named("traces/blocker.gmt");
  EXPECT_TRUE(
      std::regex_match(fs::path(renamed).filename().string(), std::regex("blocker\\.[0-9]+\\.gmt")))
      << renamed;
  const std::string plain = trace_named("traces/plain.gmt");
  write(dir + "/notes.txt", "hello\n");

  const ProcessResult r = cli({"report", "--json", dir});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const json rep = json::parse(r.out);
  ASSERT_EQ(rep["traces"].size(), 2u) << rep.dump(1);
  EXPECT_EQ(rep["traces"][0]["path"], renamed);
  EXPECT_EQ(rep["traces"][1]["path"], plain);
  EXPECT_FALSE(rep.contains("errors"));

  // Named on the command line, the file that is not a trace is still an error.
  const ProcessResult named = cli({"report", "--json", dir + "/blocker.gmt", plain});
  EXPECT_EQ(named.exit_code, 1);
  EXPECT_EQ(json::parse(named.out)["traces"].size(), 1u);
  EXPECT_NE(named.err.find(dir + "/blocker.gmt"), std::string::npos) << named.err;
}

TEST_F(CliUsage, ATraceNamedTwiceIsReadOnce) {
  const std::string dir = dir_ + "/traces";
  fs::create_directory(dir);
  const std::string t = trace_named("traces/t.gmt");
  const std::string relative = "traces/./t.gmt";  // the cli runs in dir_
  const ProcessResult r = cli({"report", "--json", dir, t, relative});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["traces"].size(), 1u);
}

TEST_F(CliUsage, ADirectoryWithoutTracesIsAnError) {
  const std::string empty = dir_ + "/empty";
  fs::create_directory(empty);
  const ProcessResult report = cli({"report", empty});
  EXPECT_EQ(report.exit_code, 1);
  EXPECT_EQ(report.err, "gpumemtrace: no traces in " + empty + "\n");
  const ProcessResult html = cli({"html", empty, "-o", dir_ + "/page.html"});
  EXPECT_EQ(html.exit_code, 1);
  EXPECT_EQ(html.err, "gpumemtrace: no traces in " + empty + "\n");
  EXPECT_FALSE(fs::exists(dir_ + "/page.html"));
  // With a trace beside it, the trace is reported and the empty directory still named.
  const std::string t = trace_named("t.gmt");
  const ProcessResult both = cli({"report", "--json", empty, t});
  EXPECT_EQ(both.exit_code, 1);
  const json rep = json::parse(both.out);
  EXPECT_EQ(rep["traces"].size(), 1u);
  EXPECT_EQ(rep["errors"][0]["error"], "no traces in " + empty);
}

TEST_F(CliUsage, OomNamesTheDriversError) {
  const std::string t = trace_named("t.gmt", {"alloc:a:" + mib(1), "oom:" + mib(64 * 1024)});
  const ProcessResult text = cli({"oom", t});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find(": cudaMalloc of 64.0 GiB (device, CUDA_ERROR_OUT_OF_MEMORY) with "
                          "1.00 MiB live\n"),
            std::string::npos)
      << text.out;
  const json j = json::parse(cli({"oom", t, "--json"}).out);
  EXPECT_EQ(j["ooms"][0]["error"], 2);
  EXPECT_EQ(j["ooms"][0]["error_name"], "CUDA_ERROR_OUT_OF_MEMORY");
}

TEST_F(CliUsage, TimelineCsvNamesEachColumnOnce) {
  const std::string t = trace_named("t.gmt");
  const ProcessResult r = cli({"timeline", t, "--format", "csv"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "time_ns,device,resident,device_bytes");
}

// Without --resolution the chart fits its width, whatever the trace's length; the axis labels
// stand apart and a legend says what the marks are.
TEST_F(CliUsage, TimelineChartFillsItsWidthAndExplainsItself) {
  const std::string t =
      trace_named("t.gmt", {"alloc:a:" + mib(1), "alloc:b:" + mib(4), "free:b", "free:a"});
  const ProcessResult r = cli({"timeline", t});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  ASSERT_EQ(rows.size(), 12u) << r.out;
  EXPECT_EQ(rows[0].rfind("device 0: device-resident bytes over ", 0), 0u) << rows[0];
  EXPECT_EQ(rows[9], std::string(11, ' ') + "+" + std::string(64, '-'));
  EXPECT_TRUE(std::regex_match(rows[10], std::regex(" {12}0 +[0-9.]+ (us|ms|s)"))) << rows[10];
  EXPECT_EQ(rows[10].size(), 12u + 64u) << rows[10];
  EXPECT_TRUE(std::regex_match(
      rows[11], std::regex(" {12}each column: the most live during [0-9.]+ (us|ms|s); # reaches "
                           "the peak, = below it")))
      << rows[11];
  EXPECT_NE(rows[1].find('#'), std::string::npos) << rows[1];  // the peak reaches the top row
}

TEST_F(CliUsage, RunSaysWhenTheProgramCannotStart) {
  const ProcessResult missing = cli({"run", "--", "/nonexistent/prog"}, run_env());
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_EQ(missing.err,
            "gpumemtrace run: cannot start '/nonexistent/prog': No such file or directory\n");
  std::map<std::string, std::string> env = run_env();
  env["GPUMEMTRACE_LIBRARY"] = dir_ + "/nope.so";
  const ProcessResult library = cli({"run", "--", workload("workload_runtime_shared")}, env);
  EXPECT_EQ(library.exit_code, 2);
  EXPECT_EQ(library.err, "gpumemtrace run: GPUMEMTRACE_LIBRARY names " + dir_ +
                             "/nope.so, which does not exist\n");
  write(dir_ + "/text.so", "not a library\n");
  env["GPUMEMTRACE_LIBRARY"] = dir_ + "/text.so";
  const ProcessResult text = cli({"run", "--", workload("workload_runtime_shared")}, env);
  EXPECT_EQ(text.exit_code, 2);
  EXPECT_EQ(text.err, "gpumemtrace run: GPUMEMTRACE_LIBRARY names " + dir_ +
                          "/text.so, which is not a shared library (not an ELF file)\n");
}

// The program name an ELF core file records (NT_PRPSINFO's pr_fname); empty if it has none.
std::string core_program_name(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto u16 = [&](std::size_t at) {
    uint16_t v = 0;
    if (at + 2 <= bytes.size()) std::memcpy(&v, bytes.data() + at, 2);
    return v;
  };
  const auto u32 = [&](std::size_t at) {
    uint32_t v = 0;
    if (at + 4 <= bytes.size()) std::memcpy(&v, bytes.data() + at, 4);
    return v;
  };
  const auto u64 = [&](std::size_t at) {
    uint64_t v = 0;
    if (at + 8 <= bytes.size()) std::memcpy(&v, bytes.data() + at, 8);
    return v;
  };
  if (bytes.size() < 64 ||
      bytes.compare(0, 4,
                    "\x7f"
                    "ELF") != 0 ||
      u16(16) != 4)
    return "";
  const uint64_t phoff = u64(32);
  for (uint16_t i = 0; i < u16(56); ++i) {
    const std::size_t ph = phoff + i * static_cast<std::size_t>(u16(54));
    if (u32(ph) != 4) continue;  // PT_NOTE
    std::size_t at = u64(ph + 8);
    const std::size_t end = std::min<std::size_t>(at + u64(ph + 32), bytes.size());
    while (at + 12 <= end) {
      const uint32_t name_size = u32(at), desc_size = u32(at + 4), type = u32(at + 8);
      const std::size_t desc = at + 12 + ((name_size + 3) & ~3u);
      // NT_PRPSINFO: struct elf_prpsinfo, whose pr_fname[16] is at byte 40 on 64-bit Linux.
      if (type == 3 && desc + 56 <= bytes.size()) return bytes.substr(desc + 40, 16).c_str();
      at = desc + ((desc_size + 3) & ~3u);
    }
  }
  return "";
}

// The program's core dump is the program's: `run` passes the signal on by dying of it, without a
// core of its own (under a plain core_pattern, its core took the program's file name and
// replaced the program's).
TEST_F(CliUsage, RunLeavesTheProgramsCoreDumpAlone) {
  std::ifstream pattern_file("/proc/sys/kernel/core_pattern");
  std::string pattern;
  std::getline(pattern_file, pattern);
  if (pattern.empty() || pattern[0] == '|' || pattern.find('/') != std::string::npos) {
    GTEST_SKIP() << "core dumps go elsewhere here (core_pattern " << pattern << ")";
  }
  if (!sanitizer_runtime().empty()) {
    GTEST_SKIP() << "the sanitizers' runtime, preloaded into the program, turns its cores off";
  }
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c",
               "ulimit -c unlimited && exec \"$0\" run -- /bin/sh -c 'kill -SEGV $$'", GMT_CLI};
  spec.set_env = run_env();
  spec.unset_env = {"LD_PRELOAD"};
  spec.cwd = dir_;
  const ProcessResult r = run_process(spec);
  EXPECT_EQ(r.signal, SIGSEGV) << r.err;
  EXPECT_NE(r.err.find("gpumemtrace: the program was killed by signal 11"), std::string::npos)
      << r.err;
  std::vector<std::string> cores;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    if (entry.path().filename().string().rfind("core", 0) == 0) cores.push_back(entry.path());
  }
  if (cores.empty()) GTEST_SKIP() << "no core was written here (core dumps turned off)";
  ASSERT_EQ(cores.size(), 1u);
  EXPECT_EQ(core_program_name(cores[0]), "sh");
}

// An output that is one of the inputs is refused before anything is written: the trace stays
// whole, whichever way the output names it (the same path, a link to it, a trace of an input
// directory).
TEST_F(CliUsage, AnOutputThatIsAnInputIsRefusedAndTheTraceKept) {
  const std::string t = trace_named("t.gmt");
  fs::create_directory(dir_ + "/job");
  fs::copy_file(t, dir_ + "/job/rank0.gmt");
  fs::create_symlink(t, dir_ + "/link.gmt");
  std::ifstream in(t, std::ios::binary);
  const std::string before((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"html", t, "-o", t}, t},
      {{"export", "--format", "jsonl", "-o", t, t}, t},
      {{"export", "--format", "perfetto", "-o", dir_ + "/link.gmt", t}, t},
      {{"summarize", "-o", "link.gmt", "t.gmt"}, "t.gmt"},
      {{"html", dir_ + "/job", "-o", dir_ + "/job/rank0.gmt"}, dir_ + "/job/rank0.gmt"},
  };
  for (const auto& [args, input] : cases) {
    const ProcessResult r = cli(args);
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_EQ(r.err, "gpumemtrace: the output " +
                         args[std::find(args.begin(), args.end(), "-o") - args.begin() + 1] +
                         " is the input " + input +
                         ": writing it would destroy what is read; choose another output file\n");
  }
  std::ifstream after_in(t, std::ios::binary);
  const std::string after((std::istreambuf_iterator<char>(after_in)),
                          std::istreambuf_iterator<char>());
  EXPECT_EQ(after, before);
  EXPECT_EQ(cli({"info", dir_ + "/job/rank0.gmt"}).exit_code, 0);
  // Another output beside the inputs is written as before.
  EXPECT_EQ(cli({"summarize", "-o", "s.json", "t.gmt"}).exit_code, 0);
}

// A program removed since its run: its module cannot be read, and the report says so once, however
// many passes resolve stacks (the peak's sites, then the report's own). It said it once a pass.
TEST_F(CliUsage, ASymbolizationWarningIsSaidOnce) {
  const std::string program = dir_ + "/gone_program";
  fs::copy_file(workload("workload_runtime_shared"), program);
  ASSERT_EQ(run_program_traced(program).exit_code, 0);
  fs::remove(program);
  const nlohmann::json rep = report({only_trace()});
  ASSERT_TRUE(rep["traces"][0].contains("symbolization_warnings")) << rep["traces"][0].dump();
  const auto warnings = rep["traces"][0]["symbolization_warnings"].get<std::vector<std::string>>();
  ASSERT_FALSE(warnings.empty());
  const std::set<std::string> distinct(warnings.begin(), warnings.end());
  EXPECT_EQ(distinct.size(), warnings.size()) << rep["traces"][0]["symbolization_warnings"].dump();
  EXPECT_NE(warnings[0].find(program), std::string::npos) << warnings[0];
}

// A previous run's trace of the same pattern, however recent, is not listed as this run's.
TEST_F(CliUsage, RunListsOnlyTheTracesItsProgramWrote) {
  const std::vector<std::string> args = {
      "run", "-o", "same.gmt", "--", workload("workload_runtime_shared"), "alloc:a:" + mib(1)};
  const ProcessResult first = cli(args, run_env());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find("gpumemtrace: 1 trace written:\n  " + dir_ + "/same.gmt\n"),
            std::string::npos)
      << first.err;
  const ProcessResult second = cli(args, run_env());
  ASSERT_EQ(second.exit_code, 0) << second.err;
  ASSERT_EQ(all_traces().size(), 2u);
  const std::string renamed =
      all_traces()[0] == dir_ + "/same.gmt" ? all_traces()[1] : all_traces()[0];
  EXPECT_TRUE(std::regex_match(renamed, std::regex(dir_ + "/same\\.[0-9]+\\.gmt"))) << renamed;
  EXPECT_NE(second.err.find("gpumemtrace: 1 trace written:\n  " + renamed + "\nnext: "),
            std::string::npos)
      << second.err;
}

// `run -o` names where traces go: an empty pattern is no pattern (not the default, silently), and
// a file that no trace can be written over (/dev/null) is refused, as is the same through
// GPUMEMTRACE_OUTPUT, before the program starts: nothing is made beside it.
TEST_F(CliUsage, RunRefusesAnEmptyOrSpecialOutput) {
  const std::string program = workload("workload_runtime_shared");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "-o", "", "--", program, "alloc:a:" + mib(1)},
        {"run", "--output=", "--", program, "alloc:a:" + mib(1)}}) {
    const ProcessResult r = cli(args, run_env());
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "gpumemtrace run: " + std::string(args[1] == "-o" ? "-o" : "--output") +
                         " needs a path pattern, not an empty one (leave it out for the default, "
                         "gpumemtrace.%p.gmt in the current directory)\n");
  }
  const std::string refused =
      "gpumemtrace run: -o '/dev/null' is not a file a trace can be written to (a character "
      "device): name a file pattern or a directory; to run the program untraced, run it without "
      "gpumemtrace\n";
  ProcessResult r = cli({"run", "-o", "/dev/null", "--", program, "alloc:a:" + mib(1)}, run_env());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, refused);
  EXPECT_EQ(r.out, "");  // the program did not run
  auto env = run_env();
  env["GPUMEMTRACE_OUTPUT"] = "/dev/null";
  r = cli({"run", "--", program, "alloc:a:" + mib(1)}, env);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "gpumemtrace run: GPUMEMTRACE_OUTPUT '/dev/null' is not a file a trace can be "
            "written to (a character device): name a file pattern or a directory; to run "
            "the program untraced, run it without gpumemtrace\n");
  EXPECT_TRUE(all_traces().empty());
}

// The image a process execs writes its own trace under the one name rule (x.<pid>.1.gmt beside
// x.<pid>.gmt: its pid is the same), never x.<pid>.gmt.<pid>; a job of the two is one process,
// in two traces, the second named as the image after the exec.
TEST_F(CliUsage, AnExecdImageIsNamedByTheOneRule) {
  const ProcessResult r = cli({"run", "-o", "x.%p.gmt", "--", workload("workload_hostile_program"),
                               "exec-alloc", dir_ + "/exec.out"},
                              run_env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto found = all_traces();
  ASSERT_EQ(found.size(), 2u) << r.err;
  std::smatch first;
  ASSERT_TRUE(std::regex_match(found[0], first, std::regex(dir_ + "/x\\.([0-9]+)\\.1\\.gmt")))
      << found[0];
  EXPECT_EQ(found[1], dir_ + "/x." + first[1].str() + ".gmt");
  EXPECT_NE(r.err.find("gpumemtrace: 2 traces written:\n"), std::string::npos) << r.err;
  // The first ends by exec, the second is the exec'd image's.
  const json rep = report({found[1], found[0]});
  EXPECT_EQ(rep["traces"][0]["end"], "exec");
  EXPECT_EQ(rep["traces"][1]["end"], "exited");
  EXPECT_EQ(rep["job"]["processes"], 1);
  EXPECT_EQ(rep["job"]["traces"], 2);
  const ProcessResult text = cli({"report", dir_});
  EXPECT_NE(text.out.find("run of 1 process (2 traces: 1 image a process exec'd after another)\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("   (after exec)\n"), std::string::npos) << text.out;
}

TEST_F(CliUsage, RunIntoADirectoryUsesTheDefaultNameThere) {
  fs::create_directory(dir_ + "/out");
  const ProcessResult r =
      cli({"run", "-o", "out", "--", workload("workload_runtime_shared"), "alloc:a:" + mib(1)},
          run_env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto found = all_traces();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(std::regex_match(found[0], std::regex(dir_ + "/out/gpumemtrace\\.[0-9]+\\.gmt")))
      << found[0];
  EXPECT_FALSE(fs::exists(dir_ + "/out.gmt"));
}

// A program whose name holds a terminal escape is printed with the escape spelled out.
TEST_F(CliUsage, ControlCharactersInTheTraceArePrintedEscaped) {
  const std::string odd = dir_ + "/run\x1b[2Jme";
  fs::create_symlink(workload("workload_runtime_shared"), odd);
  const ProcessResult run = run_program_traced(odd);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string t = only_trace();
  for (const std::string command : {"report", "info"}) {
    const ProcessResult r = cli({command, t});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << command;
    EXPECT_NE(r.out.find(dir_ + "/run\\x1b[2Jme alloc:a:"), std::string::npos) << r.out;
  }
  // JSON keeps the bytes (escaped as JSON escapes them).
  EXPECT_EQ(report({t})["traces"][0]["argv"][0], odd);
}

// The page's timeline agrees with `timeline`: nothing is live before the first allocation (the
// demo's phases start the trace before its first allocation).
TEST_F(CliUsage, ThePagesTimelineHoldsNothingBeforeTheFirstAllocation) {
  const ProcessResult run = run_traced("demo_training", {"4"}, {{"FAKECUDA_DEVICE_COUNT", "2"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string t = only_trace();
  const ProcessResult dumped = cli({"dump", t});
  ASSERT_EQ(dumped.exit_code, 0) << dumped.err;
  std::map<int, uint64_t> first_alloc;
  std::istringstream lines(dumped.out);
  for (std::string line; std::getline(lines, line);) {
    const json record = json::parse(line);
    if (record["record"] != "alloc") continue;
    first_alloc.emplace(record["device"].get<int>(), record["time_ns"].get<uint64_t>());
  }
  ASSERT_EQ(first_alloc.size(), 2u);
  const json page = embedded_data(read_file(html({t})));
  const json& devices = page["traces"][0]["devices"];
  ASSERT_EQ(devices.size(), 2u);
  for (const json& d : devices) {
    const json& tl = d["timeline"];
    const uint64_t res = tl["resolution_ns"];
    const uint64_t first = first_alloc.at(d["device"].get<int>());
    const uint64_t empty_buckets = first / res;  // buckets that end before the first allocation
    ASSERT_GT(empty_buckets, 0u) << "device " << d["device"];
    for (uint64_t b = 0; b < empty_buckets; ++b) {
      EXPECT_EQ(tl["resident"][b], 0) << "device " << d["device"] << " bucket " << b;
      for (const json& layer : tl["libraries"]) EXPECT_EQ(layer["bytes"][b], 0) << layer["name"];
    }
    EXPECT_GT(tl["resident"][empty_buckets].get<uint64_t>(), 0u);
  }
}

}  // namespace
}  // namespace gmt::test
