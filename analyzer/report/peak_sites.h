// SPDX-License-Identifier: Apache-2.0
// Turns the stack ids of a device's peak sites into symbolized frames, for the reports.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {

// The `top` largest peak sites of every device of `trace`, symbolized from the trace's own
// module records. Returns the symbolizer's warnings (files missing, build-id mismatches).
std::vector<std::string> resolve_peak_sites(TraceSummary& trace, std::size_t top);

}  // namespace gmt::analyzer
