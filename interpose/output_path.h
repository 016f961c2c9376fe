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

// Whether the pattern names the pid (%p, not %%p).
bool pattern_names_pid(std::string_view pattern);

// The one rule for a trace's name when `name` (the expanded pattern) is taken: never over another
// file, the candidate for attempt 1, 2, ... puts before the name's `.gmt` (or at its end, for a
// name without it) `.<pid>` where the pattern does not name the pid, then `.<attempt>` counting
// from 1 (from 2 where the pid was added): `x.12.gmt` taken (the trace of the image before an
// exec, whose pid is the same) gives `x.12.1.gmt`, `trace.gmt` gives `trace.12.gmt`, then
// `trace.12.1.gmt`. Every trace's name still ends in `.gmt`.
std::string taken_name_candidate(std::string_view name, long pid, bool names_pid, int attempt);

// The rank from the variables that launchers set (torchrun, MPI, Slurm), or "0".
std::string rank_from_environment();

}  // namespace gmt::interpose
