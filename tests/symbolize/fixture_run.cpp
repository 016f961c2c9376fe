// SPDX-License-Identifier: Apache-2.0
#include "tests/symbolize/fixture_run.h"

#include <cstdio>
#include <filesystem>
#include <sstream>

namespace gmt::analyzer::symbolize_test {

std::optional<ModuleInfo> FixtureRun::module_named(const std::string& file_name) const {
  for (const ModuleInfo& module : modules) {
    if (std::filesystem::path(module.path).filename() == file_name) return module;
  }
  return std::nullopt;
}

FixtureRun run_fixture(const std::string& program, const std::string& library) {
  FixtureRun run;
  const std::string command = "'" + program + "' '" + library + "'";
  FILE* output = popen(command.c_str(), "r");
  if (output == nullptr) {
    run.error = "cannot run " + command;
    return run;
  }
  std::string text;
  char buffer[4096];
  size_t count = 0;
  while ((count = fread(buffer, 1, sizeof buffer, output)) > 0) text.append(buffer, count);
  const int status = pclose(output);
  if (status != 0) {
    run.error = command + " failed with status " + std::to_string(status);
    return run;
  }

  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    if (kind == "site") {
      std::string name;
      FixtureSite site;
      fields >> name >> std::hex >> site.address >> std::dec >> site.line;
      run.sites[name] = site;
    } else if (kind == "module") {
      ModuleInfo module;
      fields >> std::hex >> module.load_base >> module.start >> module.end >> module.build_id;
      if (module.build_id == "-") module.build_id.clear();
      std::getline(fields >> std::ws, module.path);
      run.modules.push_back(std::move(module));
    }
  }
  if (run.sites.empty() || run.modules.empty()) run.error = "unexpected output: " + text;
  return run;
}

}  // namespace gmt::analyzer::symbolize_test
