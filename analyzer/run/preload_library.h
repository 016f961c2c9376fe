// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string>

namespace gmt::analyzer {

struct PreloadLibrary {
  std::optional<std::string> path;  // absolute; empty when not found
  std::string error;                // why not, for the user, when `path` is empty
};

// libgpumemtrace.so for `run`: $GPUMEMTRACE_LIBRARY, else next to this executable (build
// tree), else ../lib or ../lib/gpumemtrace relative to it (installed). A GPUMEMTRACE_LIBRARY
// that names no file, or no shared library (an ELF file), is an error that says so.
PreloadLibrary find_preload_library();

}  // namespace gmt::analyzer
