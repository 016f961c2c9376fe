// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string>

namespace gmt::analyzer {

// libgpumemtrace.so for `run`: $GPUMEMTRACE_LIBRARY, else next to this executable (build
// tree), else ../lib or ../lib/gpumemtrace relative to it (installed).
std::optional<std::string> find_preload_library();

}  // namespace gmt::analyzer
