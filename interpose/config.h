// What the user asked for through the environment. Read once, when the runtime is created.
#pragma once

#include <string>

namespace gmt::interpose {

inline constexpr const char* kDefaultOutputPattern = "gpumemtrace.%p.gmt";

struct Config {
  std::string output_pattern = kDefaultOutputPattern;  // GPUMEMTRACE_OUTPUT
  bool debug_lookups = false;  // GPUMEMTRACE_DEBUG=1: log every driver lookup to stderr

  static Config from_environment();
};

}  // namespace gmt::interpose
