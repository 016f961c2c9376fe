// SPDX-License-Identifier: Apache-2.0
// synthetic_trace's command line: its options with their defaults, and their parsing. The
// generators read an Options, never argv.
#pragma once

#include <cstdint>
#include <string>

namespace gmt::bench {

struct Options {
  std::string output;
  uint64_t events = 10'000'000;
  uint32_t stacks = 2000;
  uint64_t live = 50'000;
  uint32_t threads = 4;
  int devices = 2;
  uint64_t seed = 1;
  uint32_t chunk_size = 64 * 1024;  // what the preload library writes
  uint64_t vmm_one_in = 5'000;      // of the events, how rare a VMM step and a failure are
  uint64_t fail_one_in = 100'000;
  bool framework_blocks = false;  // PyTorch's block events and the roles hooks' records instead
};

// The options `argv` gives (main.cpp prints their usage). Throws std::runtime_error, saying
// which, for an unknown option, a value that is not a number, or one out of range.
Options parse(int argc, char** argv);

}  // namespace gmt::bench
