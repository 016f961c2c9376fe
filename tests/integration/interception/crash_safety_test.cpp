// SPDX-License-Identifier: Apache-2.0
// Nothing recorded is lost when the process dies: a workload reports every allocation and free
// it completed through a pipe, is killed at a random moment, and every reported call must be in
// its trace, in order, exactly.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "tests/integration/traced_run_fixture.h"

namespace gmt::test {
namespace {

using nlohmann::json;

class CrashSafety : public TracedRun, public ::testing::WithParamInterface<int> {
 protected:
  // Starts the loop under the preload, lets it run for `run_for`, kills it with `sig`, and
  // returns everything it reported.
  std::string run_and_kill(int sig, std::chrono::milliseconds run_for) {
    int out[2];
    EXPECT_EQ(pipe(out), 0);
    const pid_t pid = fork();
    if (pid == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      const int err = open((dir_ + "/stderr.txt").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      if (err >= 0) dup2(err, STDERR_FILENO);
      for (const auto& [name, value] : base_env()) setenv(name.c_str(), value.c_str(), 1);
      setenv("LD_PRELOAD", preload().c_str(), 1);
      // In a sanitized build, the signal must kill the program, not start a sanitizer report.
      if (!sanitizer_runtime().empty())
        setenv("ASAN_OPTIONS", "detect_leaks=0:handle_segv=0:handle_abort=0", 1);
      if (chdir(dir_.c_str()) != 0) _exit(125);
      const std::string program = workload("workload_crash_loop");
      execl(program.c_str(), program.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    // The clock starts with the first call reported: start-up time varies (a sanitized build
    // starts slowly), and a process killed before its first call has no trace to check.
    std::string reported;
    char buf[65536];
    const ssize_t first = read(out[0], buf, sizeof buf);
    if (first > 0) reported.append(buf, static_cast<std::size_t>(first));
    std::this_thread::sleep_for(run_for);
    kill(pid, sig);
    for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) {
      reported.append(buf, static_cast<std::size_t>(n));
    }
    close(out[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status)) << status;
    return reported;
  }

  // The allocations and frees of the trace, in order, as the workload prints them.
  std::vector<std::string> traced_calls(const std::string& trace) {
    const ProcessResult r = cli({"dump", trace});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> calls;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      const json rec = json::parse(line);
      if (rec["record"] == "alloc") {
        calls.push_back("a " + std::to_string(rec["address"].get<uint64_t>()) + " " +
                        std::to_string(rec["size"].get<uint64_t>()));
      } else if (rec["record"] == "free") {
        calls.push_back("f " + std::to_string(rec["address"].get<uint64_t>()));
      }
    }
    return calls;
  }
};

TEST_P(CrashSafety, EveryReportedCallIsInTheTraceWhateverTheSignal) {
  std::mt19937 random(static_cast<unsigned>(GetParam()) * 7919u);
  for (int round = 0; round < 8; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const auto run_for = std::chrono::milliseconds(5 + random() % 60);
    const std::string reported = run_and_kill(GetParam(), run_for);
    const std::string trace = only_trace();
    ASSERT_FALSE(trace.empty()) << "reported " << reported.size()
                                << " bytes: " << reported.substr(0, 200)
                                << "; its stderr: " << read_file(dir_ + "/stderr.txt");
    const std::vector<std::string> calls = traced_calls(trace);
    std::istringstream lines(reported);
    std::size_t index = 0;
    for (std::string line; std::getline(lines, line); ++index) {
      ASSERT_LT(index, calls.size()) << "reported but not traced: " << line;
      ASSERT_EQ(calls[index], line) << "at call " << index;
    }
    // The trace may hold one call more: completed, recorded, killed before it was reported.
    EXPECT_LE(calls.size(), index + 1);
    EXPECT_GT(index, 0u);
    std::filesystem::remove(trace);
  }
}

INSTANTIATE_TEST_SUITE_P(Signals, CrashSafety, ::testing::Values(SIGKILL, SIGSEGV, SIGABRT),
                         [](const auto& info) {
                           return std::string(strsignal(info.param)).substr(0, 4) == "Kill"
                                      ? std::string("SIGKILL")
                                  : info.param == SIGSEGV ? std::string("SIGSEGV")
                                                          : std::string("SIGABRT");
                         });

}  // namespace
}  // namespace gmt::test
