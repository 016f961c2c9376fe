// SPDX-License-Identifier: Apache-2.0
#include "tests/integration/process_runner.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gmt::test {
namespace {

std::string read_and_remove(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::remove(path.c_str());
  return ss.str();
}

int temp_file(std::string& path) {
  char name[] = "/tmp/gmt-test-output-XXXXXX";
  const int fd = mkstemp(name);
  if (fd < 0) throw std::runtime_error(std::string("mkstemp: ") + std::strerror(errno));
  path = name;
  return fd;
}

}  // namespace

ProcessResult run_process(const ProcessSpec& spec) {
  std::string out_path, err_path;
  const int out_fd = temp_file(out_path);
  const int err_fd = temp_file(err_path);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    const int null_fd = open("/dev/null", O_RDONLY);
    dup2(null_fd, STDIN_FILENO);
    for (const auto& name : spec.unset_env) unsetenv(name.c_str());
    for (const auto& [name, value] : spec.set_env) setenv(name.c_str(), value.c_str(), 1);
    if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) _exit(125);
    std::vector<char*> argv;
    for (const auto& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    std::fprintf(stderr, "exec %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  close(out_fd);
  close(err_fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ProcessResult result;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.out = read_and_remove(out_path);
  result.err = read_and_remove(err_path);
  return result;
}

}  // namespace gmt::test
