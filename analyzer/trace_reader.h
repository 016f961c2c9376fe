// Reads one trace file from start to end through the replay model.
#pragma once

#include <string>

#include "analyzer/trace_summary.h"

namespace gmt::analyzer {

// Throws TraceError when the file is not a readable trace at all (missing, empty, not a trace,
// unsupported version). A trace that is cut short or damaged part-way is not an error: the
// summary covers everything before the damage and says where and why reading stopped.
TraceSummary summarize_trace(const std::string& path);

}  // namespace gmt::analyzer
