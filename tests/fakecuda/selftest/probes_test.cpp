// SPDX-License-Identifier: Apache-2.0
// Runs the probe programs: a shared-runtime program under the probe preload (the runtime reaches
// the driver only through cuGetProcAddress, both ABIs, and the fake's internal calls never hit
// exported symbols), and a static-runtime program (the driver is dlopened at run time).
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "selftest/scenario.h"

namespace fakecuda_test {
namespace {

// Exit status of `argv` run with `env` added to a FAKECUDA-free environment; 128 + signal when
// it was killed.
int run(const std::vector<std::string>& argv, const Env& env) {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    for (const char* name :
         {"FAKECUDA_DEVICE_COUNT", "FAKECUDA_DEVICE_MEMORY", "FAKECUDA_CONTEXT_OVERHEAD",
          "FAKECUDA_OTHER_PROCESS_MEMORY", "FAKECUDA_OTHER_PROCESS_PID", "CUDA_VISIBLE_DEVICES",
          "LD_PRELOAD", "LD_LIBRARY_PATH"}) {
      unsetenv(name);
    }
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> arguments;
    for (const std::string& argument : argv)
      arguments.push_back(const_cast<char*>(argument.c_str()));
    arguments.push_back(nullptr);
    execv(arguments[0], arguments.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string temporary_path() {
  char path[] = "/tmp/fakecuda-probe-XXXXXX";
  int fd = mkstemp(path);
  if (fd >= 0) close(fd);
  return path;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream file(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(line);
  return lines;
}

size_t position(const std::vector<std::string>& lines, const std::string& line) {
  return static_cast<size_t>(std::find(lines.begin(), lines.end(), line) - lines.begin());
}

// What every cudart (shared or static) must show an interposer that hooks dlsym.
void expect_runtime_path(const std::vector<std::string>& log) {
  auto has = [&](const std::string& line) { return position(log, line) < log.size(); };
  ASSERT_TRUE(has("dlsym cuGetProcAddress_v2"));
  EXPECT_TRUE(has("v2 cuGetProcAddress 11030 0"));
  EXPECT_TRUE(has("v2 cuGetProcAddress 12000 0"));
  EXPECT_TRUE(has("legacy cuMemGetInfo 13000 1"));  // the 4-argument ABI is used too
  EXPECT_TRUE(has("v2 cuMemAlloc 13000 0"));
  EXPECT_TRUE(has("v2 cuMemFree 13000 0"));
  EXPECT_TRUE(has("v2 cuMemAllocAsync 13000 2"));  // the _ptsz flavour
  EXPECT_TRUE(has("v2 cuDevicePrimaryCtxRetain 13000 0"));
  EXPECT_LT(position(log, "dlsym cuGetProcAddress_v2"),
            position(log, "v2 cuGetProcAddress 11030 0"));
  EXPECT_LT(position(log, "v2 cuGetProcAddress 12000 0"), position(log, "v2 cuInit 13000 0"));
  for (const std::string& line : log) EXPECT_EQ(line.rfind("TRAP", 0), std::string::npos) << line;
}

// Sanitizer runtimes look their real functions up with dlsym(RTLD_NEXT, ...), which the probe
// preload's simple dlsym hook would answer relative to itself; skip the preload runs there.
bool sanitized() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

TEST(Probes, SharedRuntimeReachesTheDriverOnlyThroughCuGetProcAddress) {
  if (sanitized()) GTEST_SKIP() << "the probe preload cannot run under a sanitizer runtime";
  std::string log = temporary_path();
  EXPECT_EQ(run({FAKECUDA_SHARED_PROBE},
                {{"LD_PRELOAD", FAKECUDA_PROBE_PRELOAD}, {"FAKECUDA_PROBE_LOG", log}}),
            0);
  std::vector<std::string> lines = read_lines(log);
  expect_runtime_path(lines);
  // cudaGetDriverEntryPointByVersion goes through the same (wrapped) cuGetProcAddress_v2.
  EXPECT_LT(position(lines, "v2 cuMemGetInfo 2000 0"), lines.size());
  EXPECT_LT(position(lines, "v2 cuMemAlloc 2000 0"), lines.size());
  unlink(log.c_str());
}

// The probe finds the fake libraries through its RUNPATH. A sanitizer runtime intercepts dlopen
// and searches as itself (without that RUNPATH), so it gets LD_LIBRARY_PATH there.
TEST(Probes, StaticRuntimeLoadsTheDriverAtRunTime) {
  Env env;
  if (sanitized()) env.emplace("LD_LIBRARY_PATH", FAKECUDA_LIB_DIR);
  EXPECT_EQ(run({FAKECUDA_STATIC_PROBE}, env), 0);
}

TEST(Probes, StaticRuntimeReachesTheDriverOnlyThroughCuGetProcAddress) {
  if (sanitized()) GTEST_SKIP() << "the probe preload cannot run under a sanitizer runtime";
  std::string log = temporary_path();
  EXPECT_EQ(run({FAKECUDA_STATIC_PROBE},
                {{"LD_PRELOAD", FAKECUDA_PROBE_PRELOAD}, {"FAKECUDA_PROBE_LOG", log}}),
            0);
  expect_runtime_path(read_lines(log));
  unlink(log.c_str());
}

// A runtime that finds no libcuda.so.1: a lone copy of the fake libcudart found first through
// LD_LIBRARY_PATH (its $ORIGIN has no driver next to it).
TEST(Probes, RuntimeWithoutDriverReportsInsufficientDriver) {
  std::ifstream cache("/etc/ld.so.cache", std::ios::binary);
  std::string contents((std::istreambuf_iterator<char>(cache)), std::istreambuf_iterator<char>());
  if (contents.find("libcuda.so.1") != std::string::npos) {
    GTEST_SKIP() << "this machine has a real libcuda.so.1";
  }
  char folder[] = "/tmp/fakecuda-nodriver-XXXXXX";
  ASSERT_NE(mkdtemp(folder), nullptr);
  std::string runtime = std::string(FAKECUDA_LIB_DIR) + "/libcudart.so.13";
  std::string copy = std::string(folder) + "/libcudart.so.13";
  {
    std::ifstream in(runtime, std::ios::binary);
    std::ofstream out(copy, std::ios::binary);
    out << in.rdbuf();
  }
  EXPECT_EQ(run({FAKECUDA_SHARED_PROBE, "--expect-no-driver"}, {{"LD_LIBRARY_PATH", folder}}), 0);
  unlink(copy.c_str());
  rmdir(folder);
}

}  // namespace
}  // namespace fakecuda_test
