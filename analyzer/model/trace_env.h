// SPDX-License-Identifier: Apache-2.0
// The variables the recorder kept of a process's environment ("NAME=value", TraceSummary::env):
// its launcher's rank and the frameworks' allocator settings.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gmt::analyzer {

// The value of `name` in `env`, or nullopt when it was not set.
inline std::optional<std::string_view> env_value(const std::vector<std::string>& env,
                                                 std::string_view name) {
  for (const std::string& entry : env) {
    const std::string_view e = entry;
    if (e.size() > name.size() && e.starts_with(name) && e[name.size()] == '=')
      return e.substr(name.size() + 1);
  }
  return std::nullopt;
}

}  // namespace gmt::analyzer
