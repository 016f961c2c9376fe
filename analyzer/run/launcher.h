// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace run -- CMD ARGS...`: runs a program with the preload library, so that it and
// every child it starts (torchrun workers, multiprocessing) write their traces.
#pragma once

#include <string>
#include <vector>

namespace gmt::analyzer {

struct RunOptions {
  std::string output_pattern;  // empty: $GPUMEMTRACE_OUTPUT or the library's default
  std::string stacks;          // none|native|python|all; empty: $GPUMEMTRACE_STACKS or `all`
  std::string max_size;        // a bounded trace's limit ("1GiB"); empty: $GPUMEMTRACE_MAX_SIZE
  // XLA's allocator for JAX (XLA_PYTHON_CLIENT_ALLOCATOR): "platform" shows each array at its
  // line; empty: as inherited
  std::string jax_allocator;
  std::vector<std::string> command;
  bool help = false;  // -h or --help before the command: print run_usage() and exit 0
};

// `run`'s usage, for --help and for its errors.
const char* run_usage();

// Parses what follows `run`: [-o PATTERN | --output PATTERN | --output=PATTERN]
// [--stacks MODE | --stacks=MODE] [--max-size SIZE | --max-size=SIZE]
// [--jax-allocator KIND | --jax-allocator=KIND] [--] CMD ARGS...
// [-h | --help]. The first argument that is not one of our options starts the command. Throws
// std::invalid_argument with a message for the user.
RunOptions parse_run_arguments(int argc, const char* const* argv);

// Returns the exit status to exit with. A program killed by a signal makes us die of the same
// signal, so that shells and schedulers see what they would have seen without us.
int run_traced(const RunOptions& options);

}  // namespace gmt::analyzer
