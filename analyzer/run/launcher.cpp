// SPDX-License-Identifier: Apache-2.0
#include "analyzer/run/launcher.h"

#include <glob.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string_view>

#include "analyzer/run/preload_library.h"

namespace gmt::analyzer {
namespace {

// The child's pid, for the signal handler: a plain global is all a handler may touch.
volatile sig_atomic_t g_child_pid = 0;

// Signals from the terminal (Ctrl-C) reach the whole foreground group, the child included, so
// only signals sent to us by kill() are passed on; forwarding the others would deliver twice.
void forward_signal(int sig, siginfo_t* info, void*) {
  if (g_child_pid > 0 && info != nullptr &&
      (info->si_code == SI_USER || info->si_code == SI_QUEUE)) {
    kill(g_child_pid, sig);
  }
}

constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

void install_forwarding() {
  struct sigaction action {};
  action.sa_sigaction = forward_signal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (int sig : kForwardedSignals) sigaction(sig, &action, nullptr);
}

std::string glob_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// The output pattern as a glob: every %p, %h, %r becomes '*'.
std::string pattern_to_glob(const std::string& pattern) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      const char c = pattern[++i];
      if (c == 'p' || c == 'h' || c == 'r') {
        out += '*';
      } else {
        out += glob_escape(c == '%' ? "%" : std::string("%") + c);
      }
      continue;
    }
    out += glob_escape(std::string(1, pattern[i]));
  }
  return out;
}

// Traces created by this run: files matching the pattern that were written since it started.
std::vector<std::string> traces_written_since(const std::string& pattern, time_t start) {
  std::vector<std::string> found;
  const std::string base = pattern_to_glob(pattern);
  for (const std::string& g : {base, base + ".*"}) {
    glob_t matches{};
    if (glob(g.c_str(), 0, nullptr, &matches) == 0) {
      for (std::size_t i = 0; i < matches.gl_pathc; ++i) {
        struct stat st {};
        if (stat(matches.gl_pathv[i], &st) == 0 && st.st_mtime >= start)
          found.emplace_back(matches.gl_pathv[i]);
      }
    }
    globfree(&matches);
  }
  return found;
}

std::string absolute_pattern(const std::string& pattern) {
  // Absolute, so that a program that changes directory still writes where we look.
  return std::filesystem::absolute(pattern).string();
}

void tell_where_traces_are(const std::string& pattern, time_t start) {
  const auto traces = traces_written_since(pattern, start);
  if (traces.empty()) {
    std::cerr << "gpumemtrace: no trace was written: the program made no CUDA allocation under "
                 "the profiler\n";
    return;
  }
  std::cerr << "gpumemtrace: " << traces.size() << (traces.size() == 1 ? " trace" : " traces")
            << " written:\n";
  std::string all;
  for (const auto& t : traces) {
    std::cerr << "  " << t << "\n";
    all += " " + t;
  }
  std::cerr << "next: gpumemtrace report" << all << "\n";
}

}  // namespace

namespace {

std::string stack_mode(std::string_view mode) {
  if (mode == "none" || mode == "native" || mode == "python" || mode == "all") {
    return std::string(mode);
  }
  throw std::invalid_argument("--stacks takes none, native, python or all, not '" +
                              std::string(mode) + "'");
}

}  // namespace

RunOptions parse_run_arguments(int argc, const char* const* argv) {
  RunOptions options;
  int i = 0;
  for (; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "-o" || arg == "--output") {
      if (i + 1 >= argc) throw std::invalid_argument(std::string(arg) + " needs a path pattern");
      options.output_pattern = argv[++i];
    } else if (arg.rfind("--output=", 0) == 0) {
      options.output_pattern = arg.substr(9);
    } else if (arg == "--stacks") {
      if (i + 1 >= argc) throw std::invalid_argument("--stacks needs none, native, python or all");
      options.stacks = stack_mode(argv[++i]);
    } else if (arg.rfind("--stacks=", 0) == 0) {
      options.stacks = stack_mode(arg.substr(9));
    } else if (arg.size() > 1 && arg[0] == '-') {
      throw std::invalid_argument("unknown option '" + std::string(arg) +
                                  "' (usage: gpumemtrace run [-o PATTERN] [--stacks "
                                  "none|native|python|all] [--] CMD ARGS...)");
    } else {
      break;
    }
  }
  for (; i < argc; ++i) options.command.emplace_back(argv[i]);
  if (options.command.empty()) {
    throw std::invalid_argument(
        "no command given (usage: gpumemtrace run [-o PATTERN] [--stacks none|native|python|all] "
        "[--] CMD ARGS...)");
  }
  return options;
}

namespace {

// NVTX ranges become phases when NVTX loads our library as its injection. Only one tool can
// have that place: if something else (Nsight Systems, say) holds it, it keeps it and the trace
// has no NVTX phases; gpumemtrace.h markers still work.
void claim_nvtx_injection(const std::string& library) {
  const char* current = std::getenv("NVTX_INJECTION64_PATH");
  if (current == nullptr || *current == '\0') {
    setenv("NVTX_INJECTION64_PATH", library.c_str(), 1);
  } else if (std::string(current) != library) {
    std::cerr << "gpumemtrace run: NVTX_INJECTION64_PATH is already set (" << current
              << "), so NVTX ranges go to that tool, not into the trace as phases\n";
  }
}

}  // namespace

int run_traced(const RunOptions& options) {
  const auto library = find_preload_library();
  if (!library) {
    std::cerr << "gpumemtrace run: cannot find libgpumemtrace.so next to this executable or in "
                 "../lib; set GPUMEMTRACE_LIBRARY to its path\n";
    return 2;
  }

  std::string pattern = options.output_pattern;
  if (pattern.empty()) {
    const char* inherited = std::getenv("GPUMEMTRACE_OUTPUT");
    pattern = inherited && *inherited ? inherited : "gpumemtrace.%p.gmt";
  }
  pattern = absolute_pattern(pattern);

  // Ours goes last: a sanitizer runtime already in LD_PRELOAD must stay first.
  const char* existing = std::getenv("LD_PRELOAD");
  const std::string preload =
      existing && *existing ? std::string(existing) + ":" + *library : *library;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  setenv("GPUMEMTRACE_OUTPUT", pattern.c_str(), 1);
  if (!options.stacks.empty()) setenv("GPUMEMTRACE_STACKS", options.stacks.c_str(), 1);
  claim_nvtx_injection(*library);

  const time_t start = time(nullptr);
  install_forwarding();
  const pid_t child = fork();
  if (child < 0) {
    std::cerr << "gpumemtrace run: fork failed: " << std::strerror(errno) << "\n";
    return 2;
  }
  if (child == 0) {
    std::vector<char*> argv;
    for (const auto& arg : options.command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::cerr << "gpumemtrace run: cannot run '" << options.command[0]
              << "': " << std::strerror(errno) << "\n";
    _exit(errno == ENOENT ? 127 : 126);
  }
  g_child_pid = child;

  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) {
      std::cerr << "gpumemtrace run: waiting for the program failed: " << std::strerror(errno)
                << "\n";
      return 2;
    }
  }
  tell_where_traces_are(pattern, start);

  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    std::cerr << "gpumemtrace: the program was killed by signal " << sig << " (" << strsignal(sig)
              << ")\n";
    std::cerr.flush();
    signal(sig, SIG_DFL);
    raise(sig);
    return 128 + sig;  // the signal did not kill us (ignored or blocked): exit like a shell
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace gmt::analyzer
