// SPDX-License-Identifier: Apache-2.0
#include "interpose/record/process_info.h"

#include <fcntl.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "interpose/common/clock.h"

namespace gmt::interpose {
namespace {

// /proc/self/cmdline is the only place argv survives for a preload library (main's argv is
// not ours to see); its arguments are NUL-separated.
std::vector<std::string> read_cmdline() {
  std::vector<std::string> argv;
  const int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return argv;
  std::string bytes;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;)
    bytes.append(buf, static_cast<std::size_t>(n));
  close(fd);
  std::size_t start = 0;
  while (start < bytes.size()) {
    std::size_t end = bytes.find('\0', start);
    if (end == std::string::npos) end = bytes.size();
    argv.emplace_back(bytes, start, end - start);
    start = end + 1;
  }
  return argv;
}

// The command line as the record holds it: the arguments whole while they fit
// ProcessInfoRecord::kArgvBytes, then the one that crosses it cut short, then one more that says
// what was left out.
std::vector<std::string> bounded_argv(std::vector<std::string> argv) {
  std::size_t total = 0;
  for (const std::string& a : argv) total += a.size();
  if (total <= format::ProcessInfoRecord::kArgvBytes) return argv;
  std::size_t kept = 0;
  std::size_t i = 0;
  for (; i < argv.size(); ++i) {
    const std::size_t room = format::ProcessInfoRecord::kArgvBytes - kept;
    if (argv[i].size() > room) {
      argv[i].resize(room);
      kept += room;
      ++i;
      break;
    }
    kept += argv[i].size();
  }
  argv.resize(i);
  argv.push_back("[gpumemtrace: the command line is " + std::to_string(total) + " bytes; " +
                 std::to_string(total - kept) + " of them are not recorded]");
  return argv;
}

// The variables that say where the process sits in a multi-process job: launchers (torchrun,
// MPI, SLURM) set these, and the analyzer groups and names traces by them. Then the frameworks'
// allocator settings: whether XLA pools JAX's arrays out of sight (hidden_pool.h) is one.
std::vector<std::string> job_environment() {
  static const char* const kNames[] = {"RANK",
                                       "LOCAL_RANK",
                                       "WORLD_SIZE",
                                       "LOCAL_WORLD_SIZE",
                                       "GROUP_RANK",
                                       "OMPI_COMM_WORLD_RANK",
                                       "OMPI_COMM_WORLD_SIZE",
                                       "PMI_RANK",
                                       "PMIX_RANK",
                                       "SLURM_PROCID",
                                       "SLURM_LOCALID",
                                       "SLURM_JOB_ID",
                                       "MASTER_ADDR",
                                       "MASTER_PORT",
                                       "CUDA_VISIBLE_DEVICES",
                                       "NVIDIA_VISIBLE_DEVICES",
                                       "PYTORCH_CUDA_ALLOC_CONF",
                                       "XLA_PYTHON_CLIENT_ALLOCATOR",
                                       "XLA_PYTHON_CLIENT_PREALLOCATE",
                                       "XLA_PYTHON_CLIENT_MEM_FRACTION"};
  std::vector<std::string> env;
  for (const char* name : kNames) {
    if (const char* value = getenv(name)) env.push_back(std::string(name) + "=" + value);
  }
  return env;
}

}  // namespace

format::ProcessInfoRecord capture_process_info(uint64_t mono_start_ns) {
  format::ProcessInfoRecord info;
  info.pid = static_cast<uint64_t>(getpid());
  info.ppid = static_cast<uint64_t>(getppid());
  info.mono_start_ns = mono_start_ns;
  info.wall_start_ns = clock_ns(CLOCK_REALTIME);
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof host - 1) == 0) info.host = host;
  info.argv = bounded_argv(read_cmdline());
  info.env = job_environment();
  return info;
}

}  // namespace gmt::interpose
