// SPDX-License-Identifier: Apache-2.0
// Running processes as `gpumemtrace top` finds them: the trace a traced process writes, and
// whether a process has ended.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gmt::analyzer {

// The trace process `pid` has open: among its descriptors, else its mappings; none when it has
// none (not traced, or not yet) or does not exist.
std::optional<std::string> trace_of_pid(int pid);

// Whether process `pid` of this host has ended (a zombie has).
bool process_gone(uint64_t pid);

// This host's name, as the traces record it.
std::string this_host();

}  // namespace gmt::analyzer
