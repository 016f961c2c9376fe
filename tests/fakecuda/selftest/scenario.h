// SPDX-License-Identifier: Apache-2.0
// Runs a test scenario in a forked child, so each scenario gets a fresh simulated driver
// configured by its own environment (the driver reads FAKECUDA_* at the first cuInit, and the
// parent test process never initializes it). gtest assertions work in the child; their
// failures are printed there and turn into a failure of the parent test.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>

namespace fakecuda_test {

inline constexpr unsigned long long kKiB = 1ull << 10;
inline constexpr unsigned long long kMiB = 1ull << 20;
inline constexpr unsigned long long kGiB = 1ull << 30;

using Env = std::map<std::string, std::string>;

inline void run_scenario(const Env& env, const std::function<void()>& body) {
  std::fflush(nullptr);
  pid_t pid = fork();
  ASSERT_NE(pid, -1);
  if (pid == 0) {
    for (const char* name :
         {"FAKECUDA_DEVICE_COUNT", "FAKECUDA_DEVICE_MEMORY", "FAKECUDA_CONTEXT_OVERHEAD",
          "FAKECUDA_OTHER_PROCESS_MEMORY", "FAKECUDA_OTHER_PROCESS_PID", "CUDA_VISIBLE_DEVICES"}) {
      unsetenv(name);
    }
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    body();
    std::fflush(nullptr);
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "scenario child died with signal " << WTERMSIG(status);
  int exit_code = WEXITSTATUS(status);
  EXPECT_EQ(exit_code, 0) << "scenario failed in the child (see its output above)";
}

}  // namespace fakecuda_test
