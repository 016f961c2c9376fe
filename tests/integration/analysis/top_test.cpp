// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace top`: traces read while their processes still run (live_steps waits on its stdin
// at `wait`), one process, a directory of several, a process killed while watched, and the
// interactive view in a real terminal (tmux).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/traced_run_fixture.h"

extern char** environ;

namespace gmt::test {
namespace {

using nlohmann::json;

// A guard against hanging forever, not a measurement: generous, and never asserted on.
constexpr int kPatienceMs = 60'000;

// A process started in the background with pipes to its stdin and from its stdout.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
        const std::string& cwd, const std::vector<std::string>& unset = {}) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return;
    std::vector<std::string> vars;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string var = *e;
      const std::string name = var.substr(0, var.find('='));
      if (env.count(name) || std::find(unset.begin(), unset.end(), name) != unset.end()) continue;
      vars.push_back(var);
    }
    for (const auto& [k, v] : env) vars.push_back(k + "=" + v);
    std::vector<char*> envp, args;
    for (auto& v : vars) envp.push_back(v.data());
    envp.push_back(nullptr);
    std::vector<std::string> copy = argv;
    for (auto& a : copy) args.push_back(a.data());
    args.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      if (chdir(cwd.c_str()) != 0) _exit(126);
      execve(args[0], args.data(), envp.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    stdin_ = in[1];
    stdout_ = out[0];
  }
  ~Child() {
    if (stdin_ >= 0) close(stdin_);
    if (stdout_ >= 0) close(stdout_);
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }

  // The next line of its stdout ("" at its end, or after kPatienceMs without one).
  std::string line() {
    while (true) {
      const std::size_t nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string l = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return l;
      }
      pollfd fd{stdout_, POLLIN, 0};
      if (poll(&fd, 1, kPatienceMs) <= 0) return "";
      char chunk[4096];
      const ssize_t n = read(stdout_, chunk, sizeof chunk);
      if (n <= 0) {
        std::string rest = std::move(buffer_);
        buffer_.clear();
        return rest;
      }
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  void send(const std::string& text) {
    if (write(stdin_, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
      ADD_FAILURE() << "cannot write to the child";
  }
  // Its wait status.
  int wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    return status;
  }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  int stdout_ = -1;
  bool reaped_ = false;
  std::string buffer_;
};

class Top : public TracedRun {
 protected:
  // live_steps under the preload, with `ops`; it has printed "waiting" when this returns.
  std::unique_ptr<Child> start_waiting(const std::vector<std::string>& ops,
                                       std::map<std::string, std::string> extra = {}) {
    std::vector<std::string> argv = {workload("live_steps")};
    argv.insert(argv.end(), ops.begin(), ops.end());
    std::map<std::string, std::string> env = base_env();
    env["LD_PRELOAD"] = preload();
    for (const auto& [k, v] : extra) env[k] = v;
    auto child = std::make_unique<Child>(argv, env, dir_);
    EXPECT_EQ(child->line(), "waiting");
    return child;
  }

  // `top --once --json ARGS`: exactly one line, parsed.
  json once(std::vector<std::string> args) {
    args.insert(args.begin(), {"top", "--once", "--json"});
    const ProcessResult r = cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    try {
      return json::parse(r.out);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what() << ": " << r.out;
      return json::object();
    }
  }

  static const json& process_of(const json& frame, pid_t pid) {
    for (const json& p : frame["processes"]) {
      if (p["pid"] == pid) return p;
    }
    ADD_FAILURE() << "no process " << pid << " in " << frame.dump();
    static const json none = json::object();
    return none;
  }
};

TEST_F(Top, OnceJsonShowsTheLiveBytesOfARunningProcess) {
  auto child =
      start_waiting({"alloc:a:" + mib(64), "alloc:b:" + mib(32), "free:a", "alloc:c:" + mib(16),
                     "oom:" + mib(64 * 1024), "wait", "alloc:d:" + mib(8)});
  const std::string trace = only_trace();
  const json frame = once({trace});
  ASSERT_EQ(frame["processes"].size(), 1u) << frame.dump();
  const json& p = frame["processes"][0];
  EXPECT_EQ(p["pid"], child->pid());
  EXPECT_EQ(p["state"], "running");
  EXPECT_EQ(number(p, "failed_alloc_count"), 1);
  ASSERT_EQ(p["devices"].size(), 1u) << p.dump();
  const json& d = p["devices"][0];
  EXPECT_EQ(number(d, "device"), 0);
  EXPECT_EQ(number(d, "live_bytes"), int64_t(48 * kMiB));
  EXPECT_EQ(number(d, "live_count"), 2);
  EXPECT_EQ(number(d, "peak_bytes"), int64_t(96 * kMiB));
  EXPECT_EQ(number(d, "by_kind.device"), int64_t(48 * kMiB));
  EXPECT_EQ(number(d, "failed_alloc_count"), 1);
  // Everything allocated within the last minute of the trace's life.
  EXPECT_EQ(number(d, "growth_1m_bytes"), int64_t(48 * kMiB));
  int64_t site_bytes = 0, site_count = 0;
  for (const json& s : d["top_sites"]) {
    site_bytes += s["bytes"].get<int64_t>();
    site_count += s["count"].get<int64_t>();
    EXPECT_FALSE(s["frame"].get<std::string>().empty());
  }
  EXPECT_EQ(site_bytes, int64_t(48 * kMiB)) << d.dump();
  EXPECT_EQ(site_count, 2);
  int64_t library_bytes = 0;
  for (const auto& [name, bytes] : d["by_library"].items()) library_bytes += bytes.get<int64_t>();
  EXPECT_EQ(library_bytes, int64_t(48 * kMiB)) << d.dump();
  EXPECT_EQ(number(frame, "totals.live_bytes"), int64_t(48 * kMiB));
  EXPECT_EQ(number(frame, "totals.running"), 1);

  // The same process found by its pid.
  const json by_pid = once({"--pid", std::to_string(child->pid())});
  ASSERT_EQ(by_pid["processes"].size(), 1u) << by_pid.dump();
  EXPECT_EQ(by_pid["processes"][0]["path"], trace);
  EXPECT_EQ(number(by_pid["processes"][0], "devices.0.live_bytes"), int64_t(48 * kMiB));

  // Let it finish: it shows as exited, with its final figures.
  child->send("go\n");
  const int status = child->wait();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const json after = once({trace});
  const json& q = process_of(after, child->pid());
  EXPECT_EQ(q["state"], "exited");
  EXPECT_EQ(number(q, "devices.0.peak_bytes"), int64_t(96 * kMiB));
  EXPECT_EQ(number(after, "totals.running"), 0);
}

TEST_F(Top, ADirectoryOfSeveralProcessesShowsOneLineEachAndTheTotals) {
  std::vector<std::unique_ptr<Child>> children;
  for (int i = 1; i <= 3; ++i)
    children.push_back(
        start_waiting({"alloc:a:" + mib(8 * i), "wait"}, {{"RANK", std::to_string(i - 1)}}));
  const json frame = once({dir_});
  ASSERT_EQ(frame["processes"].size(), 3u) << frame.dump();
  // Sorted by the bytes live now, most first.
  for (int i = 0; i < 3; ++i) {
    const json& p = frame["processes"][static_cast<std::size_t>(i)];
    EXPECT_EQ(p["pid"], children[static_cast<std::size_t>(2 - i)]->pid());
    EXPECT_EQ(number(p, "rank"), 2 - i);
    EXPECT_EQ(number(p, "devices.0.live_bytes"), int64_t(8 * (3 - i) * kMiB));
  }
  EXPECT_EQ(number(frame, "totals.processes"), 3);
  EXPECT_EQ(number(frame, "totals.running"), 3);
  EXPECT_EQ(number(frame, "totals.live_bytes"), int64_t(48 * kMiB));
  EXPECT_EQ(number(frame, "totals.devices.0.live_bytes"), int64_t(48 * kMiB));

  // The text frame: one line per process, and the totals.
  const ProcessResult text = cli({"top", "--once", dir_});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  std::istringstream lines(text.out);
  int process_lines = 0, total_lines = 0;
  for (std::string line; std::getline(lines, line);) {
    for (const auto& c : children) {
      if (line.rfind(std::to_string(c->pid()) + " ", 0) == 0) {
        ++process_lines;
        EXPECT_NE(line.find("running"), std::string::npos) << line;
      }
    }
    if (line.rfind("TOTAL", 0) == 0) {
      ++total_lines;
      EXPECT_NE(line.find("48.0 MiB"), std::string::npos) << line;
    }
  }
  EXPECT_EQ(process_lines, 3) << text.out;
  EXPECT_EQ(total_lines, 1) << text.out;
  for (auto& c : children) {
    c->send("go\n");
    c->wait();
  }
}

TEST_F(Top, AProcessKilledWhileWatchedShowsAsCut) {
  auto child = start_waiting({"alloc:a:" + mib(24), "alloc:b:" + mib(8), "free:b", "wait"});
  const std::string trace = only_trace();
  std::map<std::string, std::string> env;
  if (!sanitizer_runtime().empty()) env["ASAN_OPTIONS"] = "detect_leaks=0";
  Child top({GMT_CLI, "top", "--json", "--interval", "0.1", trace}, env, dir_, {"LD_PRELOAD"});
  const json first = json::parse(top.line());
  EXPECT_EQ(process_of(first, child->pid())["state"], "running");
  kill(child->pid(), SIGKILL);
  const int status = child->wait();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  // Without a terminal, top ends once every process it watches has ended: its last frame.
  std::string last;
  for (std::string l; !(l = top.line()).empty();) last = l;
  ASSERT_FALSE(last.empty());
  const json frame = json::parse(last);
  const json& p = process_of(frame, child->pid());
  EXPECT_EQ(p["state"], "cut");
  EXPECT_EQ(number(p, "devices.0.live_bytes"), int64_t(24 * kMiB));
  EXPECT_EQ(number(p, "devices.0.peak_bytes"), int64_t(32 * kMiB));
  const int top_status = top.wait();
  EXPECT_TRUE(WIFEXITED(top_status) && WEXITSTATUS(top_status) == 0) << top_status;
}

// A trace whose process still runs is being written, not cut: every command says "still running
// (pid N)" (info, report, leaks, check, a summary read while it runs), and, once the process has
// exited, that it is complete.
TEST_F(Top, ATraceStillBeingWrittenIsStillRunningEverywhere) {
  auto child = start_waiting({"alloc:a:" + mib(24), "wait"});
  const std::string trace = only_trace();
  const std::string running = "still running (pid " + std::to_string(child->pid()) + ")";

  ProcessResult r = cli({"info", trace});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nintegrity    " + running + ": every record written so far is here\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(json::parse(cli({"info", "--json", trace}).out)["integrity"], "running");
  EXPECT_EQ(report({trace})["traces"][0]["end"], "running");
  r = cli({"report", trace});
  EXPECT_NE(r.out.find("(" + running +
                       ": every record written so far is here; what is live is "
                       "what it holds now)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("    live now      24.0 MiB in 1 allocation\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n  not freed yet unfreed 24.0 MiB  (gpumemtrace leaks)\n"),
            std::string::npos)
      << r.out;
  for (const char* crashed : {"did not exit normally", "live at exit", "never freed"})
    EXPECT_EQ(r.out.find(crashed), std::string::npos) << crashed << "\n" << r.out;
  r = cli({"leaks", trace});
  EXPECT_EQ(r.out.rfind("not freed yet in " + trace + ", " + running +
                            " (24.0 MiB device-resident live now)\n",
                        0),
            0u)
      << r.out;
  r = cli({"check", trace, "--require-complete"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "note: " + trace + " is still being written: " + running +
                       ": gated on what was recorded; 24.0 MiB (25165824 bytes) live at its end "
                       "not counted as never freed (not proven leaks)\nFAIL: " +
                       trace + " is still being written: " + running + " (--require-complete)\n");
  // A summary holds what the trace held; read while the process runs, it runs.
  const std::string summary = dir_ + "/s.json";
  ASSERT_EQ(cli({"summarize", trace, "-o", summary}).exit_code, 0);
  EXPECT_EQ(report({summary})["traces"][0]["end"], "running");

  child->send("\n");
  ASSERT_EQ(child->wait(), 0);
  EXPECT_EQ(report({trace})["traces"][0]["end"], "exited");
  // The summary written while it ran holds no End record: its process is gone without one.
  EXPECT_EQ(report({summary})["traces"][0]["end"], "cut");
}

// The process is its pid and its start: a live process with the trace's pid that began after the
// trace did (the pid reused) is not the traced one, whose trace is cut; one that began before it
// is.
TEST_F(Top, AReusedPidIsNotTheTracedProcess) {
  auto child = start_waiting({"alloc:a:" + mib(8), "wait"});
  const std::string trace = only_trace();
  kill(child->pid(), SIGKILL);
  child->wait();
  const std::string summary = dir_ + "/s.json";
  ASSERT_EQ(cli({"summarize", trace, "-o", summary}).exit_code, 0);
  const json original = json::parse(read_file(summary));
  ASSERT_EQ(original["trace"]["end"], "cut");

  // A process that began after the trace did, given the trace's pid.
  Child later({"/bin/sleep", "60"}, {}, dir_);
  json reused = original;
  reused["trace"]["pid"] = later.pid();
  std::ofstream(summary, std::ios::trunc) << reused.dump();
  EXPECT_EQ(report({summary})["traces"][0]["end"], "cut");
  // This test's own process began before the trace did: as the traced process would have.
  json alive = original;
  alive["trace"]["pid"] = getpid();
  std::ofstream(summary, std::ios::trunc) << alive.dump();
  EXPECT_EQ(report({summary})["traces"][0]["end"], "running");
  // Of another host: not this host's to tell.
  alive["trace"]["host"] = "elsewhere.invalid";
  std::ofstream(summary, std::ios::trunc) << alive.dump();
  EXPECT_EQ(report({summary})["traces"][0]["end"], "cut");
}

// The interactive view in a real terminal: drawn, re-sorted by a key, left by another, and the
// terminal given back as it was.
TEST_F(Top, InteractiveInATerminal) {
  if (std::system("command -v tmux >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "tmux is not installed (scripts/install-deps.sh installs it)";
  auto child = start_waiting({"alloc:a:" + mib(40), "wait"});
  const std::string trace = only_trace();
  const std::string socket = "gmt-top-" + std::to_string(getpid());
  const std::string tmux = "tmux -L " + socket + " ";
  auto run = [&](const std::string& command) {
    const ProcessResult r = run_process({{"/bin/sh", "-c", tmux + command}, {}, {}, dir_});
    return r;
  };
  // A shell in the pane, so that the pane outlives top and shows what it left behind.
  ASSERT_EQ(run("new-session -d -s top -x 200 -y 50 /bin/sh").exit_code, 0);
  auto pane = [&] { return run("capture-pane -p -t top").out; };
  auto wait_for = [&](const std::string& text) {
    for (int i = 0; i < kPatienceMs / 100; ++i) {
      const std::string now = pane();
      if (now.find(text) != std::string::npos) return now;
      usleep(100'000);
    }
    return pane();
  };
  // The commands in a script: the pane shows what they print, and top's exit status.
  const std::string script = dir_ + "/run_top.sh";
  {
    std::ofstream out(script);
    out << "env -u LD_PRELOAD " << GMT_CLI << " top " << trace << "\n"
        << "echo top-exit=$?\n"
        << "echo canon=$(stty -a | grep -o -- '-\\?icanon' | head -n 1)\n";
  }
  ASSERT_EQ(run("send-keys -t top 'sh " + script + "' Enter").exit_code, 0);
  std::string screen = wait_for("sort: now");
  EXPECT_NE(screen.find("[q] quit"), std::string::npos) << screen;
  EXPECT_NE(screen.find("40.0 MiB"), std::string::npos) << screen;
  EXPECT_NE(screen.find(std::to_string(child->pid())), std::string::npos) << screen;
  run("send-keys -t top s");
  screen = wait_for("sort: peak");
  EXPECT_NE(screen.find("sort: peak"), std::string::npos) << screen;
  run("send-keys -t top d");
  screen = wait_for("device: 0");
  EXPECT_NE(screen.find("device: 0"), std::string::npos) << screen;
  run("send-keys -t top q");
  screen = wait_for("top-exit=0");
  EXPECT_NE(screen.find("top-exit=0"), std::string::npos) << screen;
  // Canonical mode is back on (stty says "icanon", not "-icanon").
  screen = wait_for("canon=i");
  EXPECT_NE(screen.find("canon=icanon"), std::string::npos) << screen;
  EXPECT_EQ(screen.find("canon=-icanon"), std::string::npos) << screen;
  run("kill-server");
  child->send("go\n");
  child->wait();
}

}  // namespace
}  // namespace gmt::test
