// SPDX-License-Identifier: Apache-2.0
// What the user asked for through the environment. Read once, when the runtime is created.
#pragma once

#include <cstdint>
#include <string>

namespace gmt::interpose {

inline constexpr const char* kDefaultOutputPattern = "gpumemtrace.%p.gmt";

enum class StackMode { kNone, kNative, kPython, kAll };

struct Config {
  // GPUMEMTRACE_OUTPUT; a directory means kDefaultOutputPattern in it (file_pattern_of()).
  std::string output_pattern = kDefaultOutputPattern;
  bool debug_lookups = false;  // GPUMEMTRACE_DEBUG=1: log every driver lookup to stderr
  bool torch_blocks = true;    // GPUMEMTRACE_TORCH_BLOCKS=0: no PyTorch block events
  bool roles = true;           // GPUMEMTRACE_ROLES=0: no PyTorch roles and modules hooks
  // GPUMEMTRACE_STACKS=none|native|python|all. `all` costs nothing more than `native` in a
  // process without Python (the Python part gives up once, at the first allocation).
  StackMode stacks = StackMode::kAll;
  int stack_depth = 64;  // GPUMEMTRACE_STACK_DEPTH, 1..256
  // GPUMEMTRACE_UNWIND=walker|libunwind: native stacks by our walker (stack_walker.h), with
  // libunwind for the frames it does not follow; or by libunwind alone.
  bool libunwind_only = false;
  int sample_ms = 50;      // GPUMEMTRACE_SAMPLE_MS: the sampler's period; 0 = no sampler
  bool self_time = false;  // GPUMEMTRACE_SELF_TIME=1: a note of what recording cost (RecorderCost)
  // GPUMEMTRACE_TEST_ENOSPC_AT=BYTES, for the tests only: growing the trace file past BYTES
  // fails as a full disk would (ENOSPC). 0: off.
  uint64_t test_enospc_at = 0;
  // GPUMEMTRACE_TEST_PYTHON_API=1, for the tests only: Python frames are read through the C API
  // even where they could be read in place, as with Pythons other than 3.11 and 3.12.
  bool test_python_api = false;
  // GPUMEMTRACE_MAX_SIZE=SIZE (format/size_limit.h): a bounded trace, whose oldest history is
  // dropped past SIZE bytes. 0: unbounded.
  uint64_t max_size = 0;

  // Reads the environment. An invalid value gets one warning (through `warn`) and the default:
  // a typo in a variable must never stop the program.
  static Config from_environment(void (*warn)(const std::string&));
};

}  // namespace gmt::interpose
