#include "interpose/config.h"

#include <cstdlib>
#include <string>

namespace gmt::interpose {

Config Config::from_environment() {
  Config config;
  if (const char* output = std::getenv("GPUMEMTRACE_OUTPUT");
      output != nullptr && *output != '\0') {
    config.output_pattern = output;
  }
  if (const char* debug = std::getenv("GPUMEMTRACE_DEBUG"); debug != nullptr) {
    config.debug_lookups = std::string(debug) == "1";
  }
  return config;
}

}  // namespace gmt::interpose
