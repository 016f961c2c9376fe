#include "interpose/config.h"

#include <cstdlib>

namespace gmt::interpose {

Config Config::from_environment() {
  Config config;
  if (const char* output = std::getenv("GPUMEMTRACE_OUTPUT"); output != nullptr && *output != '\0') {
    config.output_pattern = output;
  }
  return config;
}

}  // namespace gmt::interpose
