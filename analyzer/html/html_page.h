// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace html TRACE... -o report.html`: one self-contained page (no network when opened)
// with each device's timeline by role or owning library, every allocation over time, the caching
// allocator's segments at the peak and at each failure, memory per step, the flame graph of its
// peak, the leaks, the views at the peak and, for a run of several processes, the table of
// processes.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

namespace gmt::analyzer {

// The page: the drawing code and its style inlined, `data` in a <script type="application/json"
// id="gmt-data"> element that the code reads.
void write_html_page(const nlohmann::ordered_json& data, std::ostream& out);

// `gpumemtrace diff --html`: two runs side by side (run_comparison_data.h), the same style and
// helpers, the comparison's drawing code.
void write_run_comparison_page(const nlohmann::ordered_json& data, std::ostream& out);

}  // namespace gmt::analyzer
