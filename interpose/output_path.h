// SPDX-License-Identifier: Apache-2.0
// Turns the GPUMEMTRACE_OUTPUT pattern into a file name for this process, so that every
// process and rank of a job writes its own trace.
#pragma once

#include <string>
#include <string_view>

namespace gmt::interpose {

struct OutputPathVars {
  long pid = 0;
  std::string host;
  std::string rank;  // "0" when the process has no rank variable
};

// The file pattern GPUMEMTRACE_OUTPUT means: a directory (one that exists, or any name ending in
// '/') holds "gpumemtrace.%p.gmt", as `gpumemtrace run -o DIR` says; anything else is the
// pattern itself.
std::string file_pattern_of(std::string_view output);

// %p -> pid, %h -> host name, %r -> rank, %% -> %. Any other %x is kept as written.
std::string expand_output_pattern(std::string_view pattern, const OutputPathVars& vars);

// The rank from the variables that launchers set (torchrun, MPI, Slurm), or "0".
std::string rank_from_environment();

}  // namespace gmt::interpose
