// SPDX-License-Identifier: Apache-2.0
#include "analyzer/run/launcher.h"

#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "analyzer/run/preload_library.h"
#include "format/size_limit.h"

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

// The files the output pattern names (and those written when a name was taken: `x.12.1.gmt`,
// `trace.12.gmt` by interpose/output_path.h's rule, `x.gmt.12` by older versions), by their
// identity on disk.
using FileIds = std::set<std::pair<dev_t, ino_t>>;

std::vector<std::pair<std::string, std::pair<dev_t, ino_t>>> matching_files(
    const std::string& pattern) {
  std::vector<std::pair<std::string, std::pair<dev_t, ino_t>>> found;
  const std::string base = pattern_to_glob(pattern);
  std::vector<std::string> globs = {base, base + ".*"};
  if (base.size() > 4 && base.ends_with(".gmt"))
    globs.push_back(base.substr(0, base.size() - 4) + ".*.gmt");
  std::set<std::string> seen;
  for (const std::string& g : globs) {
    glob_t matches{};
    if (glob(g.c_str(), 0, nullptr, &matches) == 0) {
      for (std::size_t i = 0; i < matches.gl_pathc; ++i) {
        struct stat st {};
        if (stat(matches.gl_pathv[i], &st) == 0 && S_ISREG(st.st_mode) &&
            seen.insert(matches.gl_pathv[i]).second)
          found.push_back({matches.gl_pathv[i], {st.st_dev, st.st_ino}});
      }
    }
    globfree(&matches);
  }
  return found;
}

FileIds existing_files(const std::string& pattern) {
  FileIds ids;
  for (const auto& [path, id] : matching_files(pattern)) ids.insert(id);
  return ids;
}

// Traces created by this run: files matching the pattern that were not there when it started.
// Traces never overwrite a file (a taken name gets `.<pid>`), so each is a new file; a previous
// run's trace, however recent, is not listed.
std::vector<std::string> traces_written_since(const std::string& pattern, const FileIds& before) {
  std::vector<std::string> found;
  for (const auto& [path, id] : matching_files(pattern)) {
    if (before.count(id) == 0) found.push_back(path);
  }
  return found;
}

// A pattern that names a directory (one that exists, or any ending in '/') means the default
// name in it.
std::string output_pattern(const std::string& pattern) {
  std::error_code ec;
  if (!pattern.empty() && (pattern.back() == '/' || std::filesystem::is_directory(pattern, ec))) {
    return (std::filesystem::path(pattern) / "gpumemtrace.%p.gmt").string();
  }
  return pattern;
}

// The directory every trace of `pattern` lies in, as far as it is known before the program
// starts: up to the last '/' before the first %p, %h or %r (with %% read as the '%' it
// stands for). "" when the pattern has no directory part.
std::string known_directory(const std::string& pattern) {
  std::string literal;
  std::size_t last_slash = std::string::npos;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      const char c = pattern[i + 1];
      if (c == 'p' || c == 'h' || c == 'r') break;
      if (c == '%') {
        literal += '%';
        ++i;
        continue;
      }
    }
    if (pattern[i] == '/') last_slash = literal.size();
    literal += pattern[i];
  }
  if (last_slash == std::string::npos) return "";
  return last_slash == 0 ? "/" : literal.substr(0, last_slash);
}

// Whether the directory part of `pattern` waits on the processes' own values (%p, %h, %r):
// those directories cannot be made before they start.
bool directory_has_fields(const std::string& pattern) {
  const std::size_t slash = pattern.rfind('/');
  if (slash == std::string::npos) return false;
  for (std::size_t i = 0; i + 1 < slash; ++i) {
    if (pattern[i] != '%') continue;
    const char c = pattern[i + 1];
    if (c == 'p' || c == 'h' || c == 'r') return true;
    ++i;  // %% and any other %x are text
  }
  return false;
}

// mkdir -p `dir`; the errno of the first step that failed, else 0.
int make_directories(const std::string& dir) {
  for (std::size_t end = dir.find('/', 1);; end = dir.find('/', end + 1)) {
    const std::string step = dir.substr(0, end);
    if (::mkdir(step.c_str(), 0777) != 0) {
      if (errno != EEXIST) return errno;
      struct stat st {};
      if (::stat(step.c_str(), &st) != 0) return errno;
      if (!S_ISDIR(st.st_mode)) return ENOTDIR;
    }
    if (end == std::string::npos) return 0;
  }
}

// The traces' directory made (as far as it is known) and writable, before the program starts:
// the library can only say, in each process, that it could not create its trace, and the
// program would run untraced for nothing. false with a message when it cannot be.
bool prepare_directory(const std::string& pattern) {
  const std::string dir = known_directory(pattern);
  if (dir.empty()) return true;
  if (const int error = make_directories(dir); error != 0) {
    std::cerr << "gpumemtrace run: cannot create the directory '" << dir
              << "' for the traces: " << std::strerror(error) << "\n";
    return false;
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    std::cerr << "gpumemtrace run: cannot write traces in '" << dir << "': " << std::strerror(errno)
              << "\n";
    return false;
  }
  return true;
}

// Whether the pattern names one file, the same for every process (no %p, %h or %r), that exists
// and is no regular file: /dev/null, a FIFO. The library never writes over a file: it would
// create its trace beside it (/dev/null.<pid>). Said, with what to do instead; false then.
bool output_usable(const std::string& pattern, const std::string& given, const char* from) {
  for (std::size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    const char c = pattern[i + 1];
    if (c == 'p' || c == 'h' || c == 'r') return true;
    ++i;
  }
  struct stat st {};
  if (::stat(pattern.c_str(), &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return true;
  std::cerr << "gpumemtrace run: " << from << " '" << given
            << "' is not a file a trace can be written to ("
            << (S_ISCHR(st.st_mode)    ? "a character device"
                : S_ISFIFO(st.st_mode) ? "a FIFO"
                : S_ISSOCK(st.st_mode) ? "a socket"
                                       : "not a regular file")
            << "): name a file pattern or a directory; to run the program untraced, run it without "
               "gpumemtrace\n";
  return false;
}

std::string absolute_pattern(const std::string& pattern) {
  // Absolute, so that a program that changes directory still writes where we look.
  return std::filesystem::absolute(pattern).string();
}

void tell_where_traces_are(const std::string& pattern, const FileIds& before) {
  const auto traces = traces_written_since(pattern, before);
  if (traces.empty()) {
    std::cerr << "gpumemtrace: no trace was written: the program made no CUDA allocation under "
                 "the profiler";
    // Directories named by %p, %h or %r were not made beforehand: a missing one is the other
    // way to no trace, and each process has said so on its stderr.
    if (directory_has_fields(pattern))
      std::cerr << ", or the directory its trace names did not exist (made before the program "
                   "started: '"
                << known_directory(pattern) << "')";
    std::cerr << "\n";
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

// A bounded trace's limit, checked here rather than warned about in every process.
std::string max_size(std::string_view size) {
  if (format::parse_max_size(size)) return std::string(size);
  throw std::invalid_argument(
      "--max-size takes a size of at least 1MiB (such as 1GiB, 1.5GiB, 64MiB or a number of "
      "bytes), not '" +
      std::string(size) + "'");
}

// An output pattern as given: an empty one names nothing (it is not the default).
std::string output_value(std::string_view option, std::string_view pattern) {
  if (pattern.empty())
    throw std::invalid_argument(std::string(option) +
                                " needs a path pattern, not an empty one (leave it out for the "
                                "default, gpumemtrace.%p.gmt in the current directory)");
  return std::string(pattern);
}

// XLA's allocators, as XLA_PYTHON_CLIENT_ALLOCATOR names them.
std::string jax_allocator(std::string_view kind) {
  if (kind == "platform" || kind == "bfc" || kind == "cuda_async" || kind == "default")
    return std::string(kind);
  throw std::invalid_argument("--jax-allocator takes platform, bfc, cuda_async or default, not '" +
                              std::string(kind) + "'");
}

}  // namespace

const char* run_usage() {
  return "usage: gpumemtrace run [-o PATTERN] [--stacks none|native|python|all] [--max-size SIZE] "
         "[--jax-allocator KIND] [--] CMD ARGS...\n"
         "\n"
         "Runs CMD with the preload library; every process of it that uses CUDA writes a trace.\n"
         "\n"
         "options:\n"
         "  -o, --output PATTERN  trace file names: %p pid, %h host, %r rank; a directory means\n"
         "                        DIR/gpumemtrace.%p.gmt (default: $GPUMEMTRACE_OUTPUT, else\n"
         "                        gpumemtrace.%p.gmt in the current directory)\n"
         "  --stacks MODE         stacks recorded with each allocation: none, native, python or\n"
         "                        all (default: $GPUMEMTRACE_STACKS, else all)\n"
         "  --max-size SIZE       bound each trace to SIZE (1GiB, 64MiB, bytes; at least 1MiB):\n"
         "                        the oldest history is dropped, what is live stays explained\n"
         "                        (default: $GPUMEMTRACE_MAX_SIZE, else unbounded)\n"
         "  --jax-allocator KIND  XLA's allocator for JAX (sets XLA_PYTHON_CLIENT_ALLOCATOR):\n"
         "                        platform makes each array its own allocation, at its line, but\n"
         "                        is slower (a cudaMalloc and a cudaFree per array, no pooling);\n"
         "                        bfc or default pool arrays out of sight; or cuda_async\n"
         "                        (default: as inherited)\n"
         "  -h, --help            print this and exit\n"
         "\n"
         "The program's exit status is passed through.\n";
}

// The value of the option `name` at argv[i]: "NAME VALUE" (i moves to the value) or
// "NAME=VALUE"; nullopt when argv[i] is not that option. `needs` says what a value is.
std::optional<std::string_view> option_value(std::string_view name, std::string_view needs,
                                             int argc, const char* const* argv, int& i) {
  const std::string_view arg = argv[i];
  if (arg == name) {
    if (i + 1 >= argc)
      throw std::invalid_argument(std::string(name) + " needs " + std::string(needs));
    return argv[++i];
  }
  if (arg.size() > name.size() && arg.starts_with(name) && arg[name.size()] == '=')
    return arg.substr(name.size() + 1);
  return std::nullopt;
}

RunOptions parse_run_arguments(int argc, const char* const* argv) {
  RunOptions options;
  int i = 0;
  for (; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "-h" || arg == "--help") {
      options.help = true;
      return options;
    }
    if (arg == "-o") {
      if (i + 1 >= argc) throw std::invalid_argument("-o needs a path pattern");
      options.output_pattern = output_value("-o", argv[++i]);
    } else if (const auto output = option_value("--output", "a path pattern", argc, argv, i)) {
      options.output_pattern = output_value("--output", *output);
    } else if (const auto stacks =
                   option_value("--stacks", "none, native, python or all", argc, argv, i)) {
      options.stacks = stack_mode(*stacks);
    } else if (const auto size =
                   option_value("--max-size", "a size, such as 1GiB", argc, argv, i)) {
      options.max_size = max_size(*size);
    } else if (const auto kind = option_value(
                   "--jax-allocator", "platform, bfc, cuda_async or default", argc, argv, i)) {
      options.jax_allocator = jax_allocator(*kind);
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

// The allocator asked for replaces an inherited one, which is said: the user may not know it
// was set.
void set_jax_allocator(const std::string& kind) {
  const char* current = std::getenv("XLA_PYTHON_CLIENT_ALLOCATOR");
  if (current != nullptr && *current != '\0' && kind != current) {
    std::cerr << "gpumemtrace run: XLA_PYTHON_CLIENT_ALLOCATOR was '" << current
              << "'; the program runs with '" << kind << "' (--jax-allocator)\n";
  }
  setenv("XLA_PYTHON_CLIENT_ALLOCATOR", kind.c_str(), 1);
}

}  // namespace

int run_traced(const RunOptions& options) {
  const PreloadLibrary found = find_preload_library();
  if (!found.path) {
    std::cerr << "gpumemtrace run: " << found.error << "\n";
    return 2;
  }
  const std::string* library = &*found.path;

  std::string pattern = options.output_pattern;
  const char* from = "-o";
  if (pattern.empty()) {
    const char* inherited = std::getenv("GPUMEMTRACE_OUTPUT");
    pattern = inherited && *inherited ? inherited : "gpumemtrace.%p.gmt";
    from = "GPUMEMTRACE_OUTPUT";
  }
  const std::string given = pattern;
  pattern = absolute_pattern(output_pattern(pattern));
  if (!output_usable(pattern, given, from)) return 2;
  if (!prepare_directory(pattern)) return 2;

  // Ours goes last: a sanitizer runtime already in LD_PRELOAD must stay first.
  const char* existing = std::getenv("LD_PRELOAD");
  const std::string preload =
      existing && *existing ? std::string(existing) + ":" + *library : *library;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  setenv("GPUMEMTRACE_OUTPUT", pattern.c_str(), 1);
  if (!options.stacks.empty()) setenv("GPUMEMTRACE_STACKS", options.stacks.c_str(), 1);
  if (!options.max_size.empty()) setenv("GPUMEMTRACE_MAX_SIZE", options.max_size.c_str(), 1);
  if (!options.jax_allocator.empty()) set_jax_allocator(options.jax_allocator);
  claim_nvtx_injection(*library);

  const FileIds before = existing_files(pattern);
  // The child writes execvp's errno here when the program cannot be started; a successful exec
  // closes it (O_CLOEXEC) unwritten.
  int exec_error_pipe[2];
  if (pipe2(exec_error_pipe, O_CLOEXEC) != 0) {
    std::cerr << "gpumemtrace run: pipe failed: " << std::strerror(errno) << "\n";
    return 2;
  }
  std::vector<char*> argv;
  for (const auto& arg : options.command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  install_forwarding();
  const pid_t child = fork();
  if (child < 0) {
    std::cerr << "gpumemtrace run: fork failed: " << std::strerror(errno) << "\n";
    return 2;
  }
  if (child == 0) {
    close(exec_error_pipe[0]);
    execvp(argv[0], argv.data());
    const int error = errno;
    [[maybe_unused]] const ssize_t written = write(exec_error_pipe[1], &error, sizeof error);
    _exit(error == ENOENT ? 127 : 126);
  }
  g_child_pid = child;
  close(exec_error_pipe[1]);
  int exec_error = 0;
  ssize_t got = 0;
  do {
    got = read(exec_error_pipe[0], &exec_error, sizeof exec_error);
  } while (got < 0 && errno == EINTR);
  close(exec_error_pipe[0]);

  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) {
      std::cerr << "gpumemtrace run: waiting for the program failed: " << std::strerror(errno)
                << "\n";
      return 2;
    }
  }
  if (got == static_cast<ssize_t>(sizeof exec_error)) {
    std::cerr << "gpumemtrace run: cannot start '" << options.command[0]
              << "': " << std::strerror(exec_error) << "\n";
    return WIFEXITED(status) ? WEXITSTATUS(status) : 127;
  }
  tell_where_traces_are(pattern, before);

  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    std::cerr << "gpumemtrace: the program was killed by signal " << sig << " (" << strsignal(sig)
              << ")\n";
    std::cerr.flush();
    // Die of the same signal, so that whoever started us sees what killed the program; but not
    // dump core of our own: the program's core, written when it died, must not be replaced by the
    // launcher's (the same file name under a plain core_pattern). Not dumpable means no core at
    // all, whatever the pattern (a file or a pipe to a collector).
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    signal(sig, SIG_DFL);
    raise(sig);
    return 128 + sig;  // the signal did not kill us (ignored or blocked): exit like a shell
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace gmt::analyzer
