// SPDX-License-Identifier: Apache-2.0
// The data of `gpumemtrace diff --html`: two runs side by side. Each run's part is what
// `gpumemtrace html` draws its timelines from (page_data.h), cut to what the comparison shows:
// each device's timeline by role and by library, where its axis starts, and the runs that may be
// steps (phases, NVTX ranges, optimizer steps, root forwards). The figures of what moved are
// diff's own JSON, embedded as it is, so that the page, the text and --json say the same.
#pragma once

#include <nlohmann/json.hpp>

#include "analyzer/html/page_data.h"
#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {

// {"generator": "gpumemtrace diff", "diff": `diff`, "runs": [before, after]}. Reads each
// trace's file again (its path in the summary); throws TraceError when one cannot be read.
nlohmann::ordered_json run_comparison_data(const nlohmann::ordered_json& diff, TraceSummary before,
                                           TraceSummary after, const HtmlLimits& limits = {});

}  // namespace gmt::analyzer
