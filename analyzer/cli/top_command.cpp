// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace top`: watches running processes through their traces, read as they are written
// (analyzer/model/live/live_watch.h), and redraws a view every interval
// (analyzer/report/top/top_frame.h, top_text.h). One frame (--once), JSON lines (--json), or an
// interactive terminal view (keys: s sort, d device, q quit). Here: which traces to watch (files,
// directories scanned again at every refresh, the traces of --pid processes), the terminal, and the
// loop.
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "analyzer/cli/command_support.h"
#include "analyzer/cli/commands.h"
#include "analyzer/cli/raw_terminal.h"
#include "analyzer/model/live/live_watch.h"
#include "analyzer/report/top/top_frame.h"
#include "analyzer/report/top/top_text.h"
#include "analyzer/run/traced_processes.h"
#include "format/trace_file_name.h"

namespace gmt::analyzer {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

// A bounded trace reuses its oldest chunks: read this often, whatever the interval between
// frames, so that fewer are reused before their records are read.
constexpr uint64_t kBoundedReadNs = 100'000'000;

volatile std::sig_atomic_t g_signal = 0;
void on_signal(int sig) {
  g_signal = sig;
}

uint64_t clock_ns(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

// The traces named on the command line, found and watched.
class Top {
 public:
  explicit Top(const TopOptions& options) : options_(options), host_(this_host()) {}

  // Finds the traces to watch (directories are scanned again at every refresh, pids until
  // their trace is found); false with a message when a --pid names no traced process.
  bool discover(std::ostream& err) {
    for (const std::string& p : options_.paths) {
      std::error_code ec;
      if (fs::is_directory(p, ec)) {
        for (const auto& entry : fs::directory_iterator(p, ec)) {
          if (entry.is_regular_file(ec) &&
              format::trace_file_name(entry.path().filename().string()))
            watch_.add(entry.path().string());
        }
      } else {
        watch_.add(p);
      }
    }
    bool ok = true;
    for (int pid : options_.pids) {
      if (found_pids_.count(pid)) continue;
      if (std::optional<std::string> path = trace_of_pid(pid)) {
        found_pids_.insert(pid);
        watch_.add(*path);
      } else if (!reported_pids_.count(pid)) {
        reported_pids_.insert(pid);
        err << "gpumemtrace top: process " << pid
            << (process_gone(static_cast<uint64_t>(pid)) ? " does not exist"
                                                         : " has no trace open (is it traced?)")
            << "\n";
        ok = false;
      }
    }
    return ok;
  }

  void refresh() {
    watch_.refresh();
    frames_.resolve_new_stacks(watch_);
  }
  // Reads the bounded traces between two frames.
  void refresh_bounded() {
    for (const auto& [path, trace] : watch_.traces()) {
      if (trace->bounded()) trace->refresh();
    }
  }
  bool any_bounded() const {
    for (const auto& [path, trace] : watch_.traces()) {
      if (trace->bounded()) return true;
    }
    return false;
  }

  Json frame() {
    devices_ = top_devices(watch_);
    TopMoment moment{host_, clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_REALTIME),
                     [](const ProcessIdentity& p) { return !still_running(p); }};
    return frames_.frame(watch_, choice_, moment);
  }

  // Whether anything is, or may still come, to watch: a trace read, or one still being created,
  // a directory (scanned again at every refresh), a --pid whose process lives but whose trace
  // is not found yet. Nothing: every file named is not a trace, and waiting will not change it.
  bool anything_to_watch() const {
    for (const std::string& p : options_.paths) {
      std::error_code ec;
      if (fs::is_directory(p, ec)) return true;
    }
    for (int pid : options_.pids) {
      if (!found_pids_.count(pid) && !process_gone(static_cast<uint64_t>(pid))) return true;
    }
    for (const auto& [path, trace] : watch_.traces()) {
      if (trace->described() || trace->error().empty() || trace->may_become_trace()) return true;
    }
    return false;
  }

  // Names on `err`, once each, the files that cannot be read as traces: those that never will
  // be, or (`all`, when the watch ends) every one. True when one was ever named: the exit
  // status says so, as every other command's does.
  bool name_unreadable(std::ostream& err, bool all) {
    for (const auto& [path, trace] : watch_.traces()) {
      const LiveTrace& t = *trace;
      if (t.error().empty() || t.described() || named_unreadable_.count(path)) continue;
      if (!all && t.may_become_trace()) continue;
      named_unreadable_.insert(path);
      err << "gpumemtrace top: " << t.error() << "\n";
    }
    return !named_unreadable_.empty();
  }

  // Every process watched has ended (and there is one).
  static bool all_ended(const Json& frame) {
    if (frame["processes"].empty()) return false;
    for (const Json& p : frame["processes"]) {
      const std::string state = p["state"].get<std::string>();
      if (state == "running" || state == "starting") return false;
    }
    return true;
  }

  void cycle_sort() {
    choice_.sort = choice_.sort == TopSort::kNow    ? TopSort::kPeak
                   : choice_.sort == TopSort::kPeak ? TopSort::kGrowth
                                                    : TopSort::kNow;
  }
  // One device after another, then all again.
  void cycle_device() {
    if (devices_.empty()) {
      choice_.device.reset();
      return;
    }
    if (!choice_.device) {
      choice_.device = devices_.front();
      return;
    }
    auto it = std::upper_bound(devices_.begin(), devices_.end(), *choice_.device);
    if (it == devices_.end()) {
      choice_.device.reset();
    } else {
      choice_.device = *it;
    }
  }

 private:
  TopOptions options_;
  std::string host_;
  LiveWatch watch_;
  TopFrames frames_;
  TopChoice choice_;
  std::vector<int> devices_;
  std::set<int> found_pids_;
  std::set<int> reported_pids_;
  std::set<std::string> named_unreadable_;
};

// The interactive view of a frame: drawn over the last one from the top left, fitted to the
// terminal's size now. Each line is cleared before it is written: cleared after, a line as wide
// as the terminal would lose its last character (the cursor stays on it).
void draw(const Json& frame, std::ostream& out) {
  const TerminalSize size = terminal_size(STDOUT_FILENO);
  std::ostringstream text;
  write_top_text(frame, {true, size.columns, size.rows}, text);
  std::string drawn = "\x1b[H";
  bool line_start = true;
  for (char c : text.str()) {
    if (line_start) drawn += "\x1b[2K";
    drawn += c;
    line_start = c == '\n';
  }
  out << drawn << "\x1b[J" << std::flush;
}

}  // namespace

int top_command(const TopOptions& options, std::ostream& out, std::ostream& err) {
  Top top(options);
  if (!top.discover(err) && options.paths.empty()) return 1;
  top.refresh();
  // Named files that are not traces, and nothing else: an error, not a watch of nothing.
  if (!top.anything_to_watch()) {
    top.name_unreadable(err, true);
    return 1;
  }
  const bool interactive = !options.once && !options.json && ::isatty(STDOUT_FILENO) != 0;
  const int interval_ms = static_cast<int>(std::max(0.05, options.interval) * 1000);

  struct sigaction action {};
  struct sigaction old_int {
  }, old_term{};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: poll() returns at once
  ::sigaction(SIGINT, &action, &old_int);
  ::sigaction(SIGTERM, &action, &old_term);
  std::optional<RawTerminal> raw;
  if (interactive) {
    raw.emplace();
    out << "\x1b[?1049h\x1b[?25l" << std::flush;  // the alternate screen, no cursor
  }
  while (g_signal == 0) {
    top.discover(err);
    top.refresh();
    Json frame = top.frame();
    if (options.json) {
      out << frame.dump() << "\n" << std::flush;
    } else if (interactive) {
      draw(frame, out);
    } else {
      write_top_text(frame, {}, out);
      out << std::flush;
    }
    // Output that cannot be written (a full disk, a closed pipe) ends the watch: main() names
    // the reason and exits 1.
    if (!out) break;
    if (!interactive) top.name_unreadable(err, false);
    if (options.once) break;
    if (!interactive && (top.all_ended(frame) || !top.anything_to_watch())) break;
    // Wait for the interval, answering keys meanwhile.
    const uint64_t until =
        clock_ns(CLOCK_MONOTONIC) + static_cast<uint64_t>(interval_ms) * 1'000'000;
    const bool read_between = top.any_bounded();
    uint64_t next_read = clock_ns(CLOCK_MONOTONIC) + kBoundedReadNs;
    bool redraw = false, quit = false;
    while (!redraw && !quit && g_signal == 0) {
      const uint64_t now = clock_ns(CLOCK_MONOTONIC);
      if (now >= until) break;
      if (read_between && now >= next_read) {
        top.refresh_bounded();
        next_read = now + kBoundedReadNs;
      }
      const uint64_t wake = read_between ? std::min(until, next_read) : until;
      pollfd fd{interactive ? STDIN_FILENO : -1, POLLIN, 0};
      const int wait = static_cast<int>((wake - std::min(wake, now)) / 1'000'000) + 1;
      if (::poll(&fd, 1, wait) <= 0 || (fd.revents & POLLIN) == 0) continue;
      char key = 0;
      if (::read(STDIN_FILENO, &key, 1) != 1) continue;
      if (key == 'q' || key == 'Q') quit = true;
      if (key == 's' || key == 'S') {
        top.cycle_sort();
        redraw = true;
      }
      if (key == 'd' || key == 'D') {
        top.cycle_device();
        redraw = true;
      }
    }
    if (quit) break;
  }
  if (interactive) {
    raw.reset();
    out << "\x1b[?25h\x1b[?1049l" << std::flush;
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  const bool unreadable = top.name_unreadable(err, true);
  if (g_signal != 0) return 128 + g_signal;
  return unreadable ? 1 : 0;
}

Command add_top_command(CLI::App& app) {
  auto options = std::make_shared<TopOptions>();
  CLI::App* top = app.add_subcommand("top", "Watch running processes through their traces");
  top->add_option("traces", options->paths, kTracesHelp);
  // One pid per --pid (repeatable): `--pid 12 live/` watches process 12 and the directory.
  top->add_option("--pid", options->pids, "A traced process to watch (its open trace); repeatable")
      ->expected(1)
      ->allow_extra_args(false)
      ->type_name("PID")
      ->check(positive_whole_number());
  top->add_option("--interval", options->interval, "Seconds between refreshes (default 1)")
      ->check(seconds_interval());
  top->add_flag("--once", options->once, "Print one frame and exit");
  top->add_flag("--json", options->json,
                "One JSON object per refresh, one line each (contract in docs/top.md)");
  return {top, [options] {
            if (options->paths.empty() && options->pids.empty()) {
              std::cerr << "gpumemtrace top: name a trace, a directory or --pid PID\n";
              return 2;
            }
            return top_command(*options, std::cout, std::cerr);
          }};
}

}  // namespace gmt::analyzer
