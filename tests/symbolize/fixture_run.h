// SPDX-License-Identifier: Apache-2.0
// Runs the symbolizer fixture program and reads what it printed: the real addresses of the
// tested call sites and the modules they ran in, as the traced process would record them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/symbolize/symbolizer.h"

namespace gmt::analyzer::symbolize_test {

struct FixtureSite {
  uint64_t address = 0;  // return address (line > 0), entry PC (line == 0), or 0
  int line = 0;
};

struct FixtureRun {
  std::map<std::string, FixtureSite> sites;
  std::vector<ModuleInfo> modules;
  std::string error;  // why the fixture could not be run or read; "" when all went well

  // The module whose path ends with `file_name`.
  std::optional<ModuleInfo> module_named(const std::string& file_name) const;
};

FixtureRun run_fixture(const std::string& program, const std::string& library);

}  // namespace gmt::analyzer::symbolize_test
