// SPDX-License-Identifier: Apache-2.0
// What the analysis commands (peak, leaks, oom, info, timeline, diff, check) share: loading a
// trace with its problems reported on stderr, and the report helpers they print with.
#pragma once

#include <ostream>
#include <string>

#include "analyzer/model/summarize_trace.h"
#include "analyzer/model/trace_summary.h"
#include "analyzer/report/frame_text.h"
#include "analyzer/report/json_fields.h"
#include "analyzer/report/terminal_colour.h"

namespace gmt::analyzer {

// Summarizes `path` and names on `err` everything that had to be left out (the readable part is
// still returned). Throws TraceError when the file is not a readable trace at all.
TraceSummary load_trace(const std::string& path, std::ostream& err,
                        const SummaryOptions& options = {});

}  // namespace gmt::analyzer
