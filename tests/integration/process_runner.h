// SPDX-License-Identifier: Apache-2.0
// Runs a program to completion for a test, with a controlled environment and captured output.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace gmt::test {

struct ProcessResult {
  int exit_code = -1;  // when the process exited
  int signal = 0;      // when a signal killed it
  std::string out;
  std::string err;
};

struct ProcessSpec {
  std::vector<std::string> argv;
  std::map<std::string, std::string> set_env;  // on top of this process's environment
  std::vector<std::string> unset_env;
  std::string cwd;
};

ProcessResult run_process(const ProcessSpec& spec);

}  // namespace gmt::test
