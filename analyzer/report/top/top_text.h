// SPDX-License-Identifier: Apache-2.0
// The text view of a `gpumemtrace top` frame (top_frame.h): a header line, one line per process
// and device, the totals, then the first process's details.
#pragma once

#include <cstddef>
#include <ostream>

#include <nlohmann/json.hpp>

namespace gmt::analyzer {

// Where the view is drawn. On a terminal (`interactive`) it names the keys and the files that
// are not traces, and, given the terminal's size, it fits: each line cut to the width, the
// header, the column names and the totals always shown, as many processes as the height leaves
// ("+N more processes"), then as much of the details as still fits. Piped, nothing is cut.
struct TopScreen {
  bool interactive = false;
  std::size_t columns = 0;  // 0: unknown, not cut
  std::size_t rows = 0;     // 0: unknown, not cut
};

void write_top_text(const nlohmann::ordered_json& frame, const TopScreen& screen,
                    std::ostream& out);

}  // namespace gmt::analyzer
