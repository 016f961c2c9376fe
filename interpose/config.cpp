// SPDX-License-Identifier: Apache-2.0
#include "interpose/config.h"

#include <cstdlib>
#include <string>

#include "format/size_limit.h"
#include "interpose/output_path.h"

namespace gmt::interpose {
namespace {

const char* value_of(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

// A switch: "1" on, "0" off; anything else gets a warning naming the variable, the value and
// the accepted values, and `fallback`.
bool switch_value(const char* name, bool fallback, void (*warn)(const std::string&)) {
  const char* value = value_of(name);
  if (value == nullptr) return fallback;
  const std::string v = value;
  if (v == "1") return true;
  if (v == "0") return false;
  warn(std::string(name) + "='" + v + "' is not one of 0, 1; using " + (fallback ? "1" : "0"));
  return fallback;
}

}  // namespace

Config Config::from_environment(void (*warn)(const std::string&)) {
  Config config;
  if (const char* output = value_of("GPUMEMTRACE_OUTPUT"))
    config.output_pattern = file_pattern_of(output);
  config.debug_lookups = switch_value("GPUMEMTRACE_DEBUG", false, warn);
  // Read where the PyTorch tracker is; checked here with the others, so that a typo is told.
  config.torch_blocks = switch_value("GPUMEMTRACE_TORCH_BLOCKS", true, warn);
  config.roles = switch_value("GPUMEMTRACE_ROLES", true, warn);
  config.self_time = switch_value("GPUMEMTRACE_SELF_TIME", false, warn);
  if (const char* stacks = value_of("GPUMEMTRACE_STACKS")) {
    const std::string mode = stacks;
    if (mode == "none") {
      config.stacks = StackMode::kNone;
    } else if (mode == "native") {
      config.stacks = StackMode::kNative;
    } else if (mode == "python") {
      config.stacks = StackMode::kPython;
    } else if (mode == "all") {
      config.stacks = StackMode::kAll;
    } else {
      warn("GPUMEMTRACE_STACKS='" + mode + "' is not one of none, native, python, all; using all");
    }
  }
  if (const char* unwind = value_of("GPUMEMTRACE_UNWIND")) {
    const std::string how = unwind;
    if (how == "libunwind") {
      config.libunwind_only = true;
    } else if (how != "walker") {
      warn("GPUMEMTRACE_UNWIND='" + how + "' is not one of walker, libunwind; using walker");
    }
  }
  if (const char* depth = value_of("GPUMEMTRACE_STACK_DEPTH")) {
    char* end = nullptr;
    const long n = std::strtol(depth, &end, 10);
    if (*end != '\0' || n < 1 || n > 256) {
      warn(std::string("GPUMEMTRACE_STACK_DEPTH='") + depth +
           "' is not a number from 1 to 256; using 64");
    } else {
      config.stack_depth = static_cast<int>(n);
    }
  }
  if (const char* ms = value_of("GPUMEMTRACE_SAMPLE_MS")) {
    char* end = nullptr;
    const long n = std::strtol(ms, &end, 10);
    if (*end != '\0' || n < 0 || n > 3600 * 1000) {
      warn(std::string("GPUMEMTRACE_SAMPLE_MS='") + ms +
           "' is not a number of milliseconds (0 turns sampling off); using 50");
    } else {
      config.sample_ms = static_cast<int>(n);
    }
  }
  if (const char* api = value_of("GPUMEMTRACE_TEST_PYTHON_API")) {
    config.test_python_api = std::string(api) == "1";
  }
  if (const char* at = value_of("GPUMEMTRACE_TEST_ENOSPC_AT")) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(at, &end, 10);
    if (*end != '\0') {
      warn(std::string("GPUMEMTRACE_TEST_ENOSPC_AT='") + at +
           "' is not a number of bytes; ignored");
    } else {
      config.test_enospc_at = n;
    }
  }
  if (const char* size = value_of("GPUMEMTRACE_MAX_SIZE")) {
    if (const std::optional<uint64_t> bytes = format::parse_max_size(size)) {
      config.max_size = *bytes;
    } else {
      warn(std::string("GPUMEMTRACE_MAX_SIZE='") + size +
           "' is not a size of at least 1MiB (such as 1GiB, 1.5GiB, 64MiB or a number of "
           "bytes); recording without a limit");
    }
  }
  return config;
}

}  // namespace gmt::interpose
