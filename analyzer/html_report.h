// `gpumemtrace html TRACE... -o report.html`: one self-contained page (no network when opened)
// with each device's timeline by owning library, the flame graph of its peak, the leaks, the
// views at the peak and, for a run of several processes, the table of processes.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace gmt::analyzer {

// The page: the drawing code and its style inlined, `data` in a <script type="application/json"
// id="gmt-data"> element that the code reads.
void write_html_page(const nlohmann::ordered_json& data, std::ostream& out);

// Reads the traces (files, or directories of *.gmt files) and writes the page to `output`.
// Unreadable traces are named on `err` and the page reports the others; returns 1 when one was
// unreadable or the page could not be written, else 0.
int html_command(const std::vector<std::string>& paths, const std::string& output,
                 std::ostream& err);

}  // namespace gmt::analyzer
