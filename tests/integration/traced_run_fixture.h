// SPDX-License-Identifier: Apache-2.0
// The fixture every end-to-end test shares: a scratch folder per test, workloads run on the
// simulated CUDA stack with or without the preload library, and `gpumemtrace report --json` on
// the traces they leave.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tests/integration/process_runner.h"

namespace gmt::test {

inline constexpr uint64_t kMiB = 1024 * 1024;

// n MiB, in bytes, as a workload argument.
std::string mib(uint64_t n);

// The whole content of a file ("" if it cannot be read).
std::string read_file(const std::string& path);

class TracedRun : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  std::string workload(const std::string& name) const;

  // The simulated GPU (16 GiB, 300 MiB per context) and the trace file pattern, in dir_.
  std::map<std::string, std::string> base_env() const;

  // LD_PRELOAD for a traced run: our library, after the sanitizer runtime in a sanitized build
  // (an instrumented preload needs its runtime first).
  std::string preload() const;

  // The sanitizer runtime this build needs first in LD_PRELOAD, or "" in a normal build.
  static std::string sanitizer_runtime();

  // Runs a workload with LD_PRELOAD set, as a user would by hand.
  ProcessResult run_traced(const std::string& name, std::vector<std::string> ops,
                           std::map<std::string, std::string> extra_env = {}) const;

  // The same run without our library: what the program does when nobody watches.
  ProcessResult run_untraced(const std::string& name, std::vector<std::string> ops,
                             std::map<std::string, std::string> extra_env = {}) const;

  // Runs a workload traced, expects it to succeed and to leave one trace, and reports on that
  // trace. The workload's stdout is kept in last_output_.
  nlohmann::json traced_report(const std::string& name, std::vector<std::string> ops,
                               std::map<std::string, std::string> extra_env = {});

  // Runs a workload traced, expects it to succeed, and returns the trace it left (the one not in
  // dir_ before): for tests that compare several runs.
  std::string traced_run(const std::string& name, std::vector<std::string> ops,
                         std::map<std::string, std::string> extra_env = {}) const;

  // The trace files in dir_, sorted.
  std::vector<std::string> traces() const;
  std::string only_trace() const;

  // The gpumemtrace command, never under the preload.
  ProcessResult cli(std::vector<std::string> args,
                    std::map<std::string, std::string> env = {}) const;

  // `gpumemtrace report --json` on `paths`; a test failure if it does not succeed.
  nlohmann::json report(const std::vector<std::string>& paths) const;

  // The devices[] entry of `ordinal` (of trace `trace` when the report holds several).
  static const nlohmann::json& device(const nlohmann::json& report, int ordinal);
  static const nlohmann::json& device(const nlohmann::json& report, int trace, int ordinal);

  std::string dir_;
  std::string last_output_;

 private:
  ProcessResult run_workload(const std::string& name, const std::vector<std::string>& ops,
                             const std::map<std::string, std::string>& extra_env,
                             bool traced) const;
};

// The integer at a dotted path of a report object ("by_kind.device.peak_bytes"; a number indexes
// an array: "traces.0.unmatched_frees"). A missing key is a test failure that names the path, and
// gives -1, so that every expectation on it fails too instead of reading a default.
int64_t number(const nlohmann::json& object, std::string_view dotted_path);

// The kinds a devices[] entry lists under by_kind, sorted.
std::vector<std::string> kinds(const nlohmann::json& device);

// The number a workload printed as `key=N` on stdout (the first one), or -1 with a failure.
int64_t printed(const std::string& output, const std::string& key);

}  // namespace gmt::test
