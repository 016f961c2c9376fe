// SPDX-License-Identifier: Apache-2.0
// A program that does to its process what daemons, shells and servers do, around CUDA
// allocations: closes every descriptor it did not open, opens files of its own, moves
// descriptors with dup2, lowers its file-size limit, forks and execs, takes a storm of signals
// whose handler allocates. Run traced and untraced, it must write the same files and stdout and
// exit the same way: the recorder may never touch what the program owns.
//
//   hostile_program MODE OUTFILE ARGS...
//     close-fds OUTFILE BYTES PAIRS   one allocation, close(3..1023), open OUTFILE, write BYTES
//                                     of 'A', then PAIRS cudaMalloc/cudaFree, then 'B' x 16
//     close-range OUTFILE BYTES PAIRS the same, closing with close_range(3, ~0U, 0)
//     close-often OUTFILE ROUNDS      one allocation, then ROUNDS times: close_range(3, ~0U), open
//                                     OUTFILE, which must get descriptor 3, and close it; prints
//                                     "other_descriptor=N", the rounds it got another
//     close-wait OUTFILE MS PAIRS     one allocation, open-file limit 4, close_range(3, ~0U),
//                                     open OUTFILE (descriptor 3, the last one allowed), sleep
//                                     MS, the limit back, PAIRS pairs, write 'B' x 16
//     dup2 OUTFILE BYTES PAIRS        one allocation, open OUTFILE, write BYTES of 'A', dup2 it
//                                     onto every descriptor open on a *.gmt file, then PAIRS
//                                     pairs, then write 'B' x 16
//     fsize OUTFILE LIMIT PAIRS       RLIMIT_FSIZE = LIMIT, write LIMIT bytes of 'A' to OUTFILE,
//                                     then PAIRS pairs, then one write past the limit with
//                                     SIGXFSZ ignored (EFBIG)
//     loop OUTFILE BYTES PAIRS        OUTFILE gets BYTES of 'A', then PAIRS pairs
//     fork-exec OUTFILE               an allocation, fork; the child allocates and execs
//                                     `hostile_program exec-target OUTFILE`, which appends a line
//     exec-fail OUTFILE               an allocation, execv of a missing file, another allocation
//     exec-alloc OUTFILE              an allocation, then execs `hostile_program exec-target
//                                     OUTFILE alloc`, which allocates too (one pid, two traces)
//     signals OUTFILE PAIRS           SIGALRM every 100 us, whose handler allocates and frees
//                                     4 KiB (when the main thread is not in a CUDA call), while
//                                     the main thread makes PAIRS pairs of 1 MiB
// Prints "pairs=N" and "status=ok" lines on stdout; the handler's own count goes to stderr
// (it depends on timing, so it is no part of the compared output).
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int fail(const char* what) {
  std::fprintf(stdout, "status=failed %s errno=%d\n", what, errno);
  return 2;
}

bool write_bytes(int fd, char byte, size_t count) {
  std::vector<char> block(64 * 1024, byte);
  while (count > 0) {
    const size_t n = count < block.size() ? count : block.size();
    const ssize_t w = write(fd, block.data(), n);
    if (w <= 0) return false;
    count -= static_cast<size_t>(w);
  }
  return true;
}

// Set while the main thread is in a CUDA call: the simulated driver, like a real one, takes
// locks that a signal handler calling it then would wait on forever.
volatile sig_atomic_t in_cuda = 0;

// `spin`: work between the pairs, outside CUDA (where the signals' handler may allocate).
bool pairs(unsigned long count, size_t size, int spin = 0) {
  for (unsigned long i = 0; i < count; ++i) {
    for (int work = 0; work < spin; ++work) asm volatile("" ::: "memory");
    void* p = nullptr;
    in_cuda = 1;
    const bool ok = cudaMalloc(&p, size) == cudaSuccess && cudaFree(p) == cudaSuccess;
    in_cuda = 0;
    if (!ok) return false;
  }
  return true;
}

bool one_allocation() {
  void* p = nullptr;
  return cudaMalloc(&p, 1 << 20) == cudaSuccess;
}

int open_output(const char* path) {
  return open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
}

// Descriptors open on a trace file: the recorder's, found as a program scanning /proc would.
std::vector<int> trace_descriptors() {
  std::vector<int> fds;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return fds;
  while (dirent* entry = readdir(dir)) {
    const std::string link = std::string("/proc/self/fd/") + entry->d_name;
    char target[4096];
    const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
    if (n <= 4) continue;
    target[n] = 0;
    if (std::strcmp(target + n - 4, ".gmt") == 0 || std::strstr(target, ".gmt.") != nullptr) {
      fds.push_back(std::atoi(entry->d_name));
    }
  }
  closedir(dir);
  return fds;
}

// The handler allocates whenever the main thread is not inside a CUDA call itself (a real
// program doing this is taking its chances, but the recorder must not be what breaks it).
volatile sig_atomic_t handler_calls = 0;
volatile sig_atomic_t handler_allocations = 0;
volatile sig_atomic_t handler_failures = 0;
void on_alarm(int) {
  const int saved = errno;
  handler_calls = handler_calls + 1;
  if (!in_cuda) {
    void* p = nullptr;
    if (cudaMalloc(&p, 4096) != cudaSuccess || cudaFree(p) != cudaSuccess) handler_failures = 1;
    handler_allocations = handler_allocations + 1;
  }
  errno = saved;
}

int close_then_write(int argc, char** argv, bool use_close_range) {
  if (argc < 5) return fail("usage");
  const size_t bytes = std::strtoul(argv[3], nullptr, 10);
  const unsigned long count = std::strtoul(argv[4], nullptr, 10);
  if (!one_allocation()) return fail("first allocation");
  if (use_close_range) {
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0) return fail("close_range");
  } else {
    for (int fd = 3; fd < 1024; ++fd) close(fd);
  }
  const int fd = open_output(argv[2]);
  if (fd < 0) return fail("open");
  std::printf("fd=%d\n", fd);
  if (!write_bytes(fd, 'A', bytes)) return fail("write");
  if (!pairs(count, 1 << 20)) return fail("pairs");
  if (!write_bytes(fd, 'B', 16)) return fail("write after");
  close(fd);
  std::printf("pairs=%lu\nstatus=ok\n", count);
  return 0;
}

// The recorder's own threads (the sampler) keep recording meanwhile: whatever they do must never
// take the number the program's next open gets.
int close_often(int argc, char** argv) {
  if (argc < 4) return fail("usage");
  const unsigned long rounds = std::strtoul(argv[3], nullptr, 10);
  if (!one_allocation()) return fail("first allocation");
  unsigned long other = 0;
  for (unsigned long i = 0; i < rounds; ++i) {
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0) return fail("close_range");
    const int fd = open_output(argv[2]);
    if (fd < 0) return fail("open");
    if (fd != 3) ++other;
    close(fd);
  }
  std::printf("other_descriptor=%lu\nstatus=ok\n", other);
  return 0;
}

// While the program sleeps, no descriptor is free: a recorder's thread that opened one (the
// trace again, after the program closed it) would fail, and stop the recording.
int close_then_wait(int argc, char** argv) {
  if (argc < 5) return fail("usage");
  const long ms = std::strtol(argv[3], nullptr, 10);
  const unsigned long count = std::strtoul(argv[4], nullptr, 10);
  if (!one_allocation()) return fail("first allocation");
  rlimit before{};
  if (getrlimit(RLIMIT_NOFILE, &before) != 0) return fail("getrlimit");
  rlimit four = before;
  four.rlim_cur = 4;
  if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0) return fail("close_range");
  if (setrlimit(RLIMIT_NOFILE, &four) != 0) return fail("setrlimit");
  const int fd = open_output(argv[2]);
  if (fd < 0) return fail("open");
  std::printf("fd=%d\n", fd);
  usleep(static_cast<useconds_t>(ms) * 1000);
  if (setrlimit(RLIMIT_NOFILE, &before) != 0) return fail("setrlimit back");
  if (!pairs(count, 1 << 20)) return fail("pairs");
  if (!write_bytes(fd, 'B', 16)) return fail("write after");
  close(fd);
  std::printf("pairs=%lu\nstatus=ok\n", count);
  return 0;
}

int dup2_onto_trace(int argc, char** argv) {
  if (argc < 5) return fail("usage");
  const size_t bytes = std::strtoul(argv[3], nullptr, 10);
  const unsigned long count = std::strtoul(argv[4], nullptr, 10);
  if (!one_allocation()) return fail("first allocation");
  const int fd = open_output(argv[2]);
  if (fd < 0) return fail("open");
  if (!write_bytes(fd, 'A', bytes)) return fail("write");
  // The recorder's descriptors now name OUTFILE; an untraced run has none (how many there
  // were goes to stderr, which is not compared).
  int moved = 0;
  for (int target : trace_descriptors()) {
    if (dup2(fd, target) != target) return fail("dup2");
    ++moved;
  }
  std::fprintf(stderr, "dup2_onto_trace=%d\n", moved);
  if (!pairs(count, 1 << 20)) return fail("pairs");
  if (!write_bytes(fd, 'B', 16)) return fail("write after");
  std::printf("pairs=%lu\nstatus=ok\n", count);
  return 0;
}

int file_size_limit(int argc, char** argv) {
  if (argc < 5) return fail("usage");
  const rlim_t limit = std::strtoul(argv[3], nullptr, 10);
  const unsigned long count = std::strtoul(argv[4], nullptr, 10);
  rlimit lim{limit, limit};
  if (setrlimit(RLIMIT_FSIZE, &lim) != 0) return fail("setrlimit");
  const int fd = open_output(argv[2]);
  if (fd < 0) return fail("open");
  if (!write_bytes(fd, 'A', limit)) return fail("write");
  // SIGXFSZ keeps its default action (death) while the recorder's file grows.
  if (!pairs(count, 1 << 20)) return fail("pairs");
  // Past the limit a write fails with EFBIG only if SIGXFSZ is not fatal: the program ignores
  // it for the one write that checks it is there.
  signal(SIGXFSZ, SIG_IGN);
  const ssize_t past = write(fd, "B", 1);
  std::printf("write_past_limit=%zd errno=%s\n", past, past < 0 && errno == EFBIG ? "EFBIG" : "?");
  signal(SIGXFSZ, SIG_DFL);
  std::printf("pairs=%lu\nstatus=ok\n", count);
  return 0;
}

int loop(int argc, char** argv) {
  if (argc < 5) return fail("usage");
  const size_t bytes = std::strtoul(argv[3], nullptr, 10);
  const unsigned long count = std::strtoul(argv[4], nullptr, 10);
  const int fd = open_output(argv[2]);
  if (fd < 0) return fail("open");
  if (!write_bytes(fd, 'A', bytes)) return fail("write");
  if (!pairs(count, 1 << 20)) return fail("pairs");
  std::printf("pairs=%lu\nstatus=ok\n", count);
  return 0;
}

int fork_exec(char** argv) {
  if (!one_allocation()) return fail("first allocation");
  std::fflush(stdout);
  const pid_t child = fork();
  if (child < 0) return fail("fork");
  if (child == 0) {
    void* p = nullptr;
    if (cudaMalloc(&p, 2 << 20) != cudaSuccess) _exit(3);
    char* args[] = {argv[0], const_cast<char*>("exec-target"), argv[2], nullptr};
    execv("/proc/self/exe", args);
    _exit(4);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child) return fail("waitpid");
  std::printf("child_exit=%d\nstatus=ok\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}

int exec_target(int argc, char** argv) {
  if (argc > 3 && std::string(argv[3]) == "alloc" && !one_allocation()) return fail("allocation");
  const int fd = open_output(argv[2]);
  if (fd < 0) return fail("open");
  const char line[] = "exec target ran\n";
  if (write(fd, line, sizeof line - 1) != sizeof line - 1) return fail("write");
  std::printf("exec_target=ok\n");
  return 0;
}

int exec_alloc(char** argv) {
  if (!one_allocation()) return fail("first allocation");
  std::fflush(stdout);
  char* args[] = {argv[0], const_cast<char*>("exec-target"), argv[2], const_cast<char*>("alloc"),
                  nullptr};
  execv("/proc/self/exe", args);
  return fail("exec");
}

int exec_fail(char** argv) {
  if (!one_allocation()) return fail("first allocation");
  char* args[] = {argv[0], nullptr};
  execv("/nonexistent/gpumemtrace-no-such-program", args);
  const int err = errno;
  if (!one_allocation()) return fail("allocation after exec");
  std::printf("exec_errno=%s\nstatus=ok\n", err == ENOENT ? "ENOENT" : "?");
  return 0;
}

int signal_storm(int argc, char** argv) {
  if (argc < 4) return fail("usage");
  const unsigned long count = std::strtoul(argv[3], nullptr, 10);
  struct sigaction action {};
  action.sa_handler = on_alarm;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (sigaction(SIGALRM, &action, nullptr) != 0) return fail("sigaction");
  itimerval timer{};
  timer.it_interval.tv_usec = 100;
  timer.it_value.tv_usec = 100;
  if (setitimer(ITIMER_REAL, &timer, nullptr) != 0) return fail("setitimer");
  const bool ok = pairs(count, 1 << 20, 2000);
  timer = itimerval{};
  setitimer(ITIMER_REAL, &timer, nullptr);
  if (!ok) return fail("pairs");
  if (handler_failures) return fail("handler allocation");
  std::fprintf(stderr, "handler_calls=%d\nhandler_allocations=%d\n",
               static_cast<int>(handler_calls), static_cast<int>(handler_allocations));
  std::printf("pairs=%lu\nstatus=ok\n", count);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return fail("usage");
  const std::string mode = argv[1];
  if (mode == "close-fds") return close_then_write(argc, argv, false);
  if (mode == "close-range") return close_then_write(argc, argv, true);
  if (mode == "close-often") return close_often(argc, argv);
  if (mode == "close-wait") return close_then_wait(argc, argv);
  if (mode == "dup2") return dup2_onto_trace(argc, argv);
  if (mode == "fsize") return file_size_limit(argc, argv);
  if (mode == "loop") return loop(argc, argv);
  if (mode == "fork-exec") return fork_exec(argv);
  if (mode == "exec-target") return exec_target(argc, argv);
  if (mode == "exec-alloc") return exec_alloc(argv);
  if (mode == "exec-fail") return exec_fail(argv);
  if (mode == "signals") return signal_storm(argc, argv);
  return fail("unknown mode");
}
