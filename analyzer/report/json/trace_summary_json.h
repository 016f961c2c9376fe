// SPDX-License-Identifier: Apache-2.0
// A trace's summary as a small JSON file (`gpumemtrace summarize`): what the job view, the table
// of processes, `check` and `export --format jsonl` need from one trace, so that a job's traces
// can be summarized where they were written and reported elsewhere. docs/commands.md documents the
// fields; "format" and "version" come first, and a reader refuses a newer major version.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "analyzer/model/trace_summary.h"
#include "analyzer/report/frames/stack_frames.h"

namespace gmt::analyzer {

inline constexpr const char* kSummaryFormat = "gpumemtrace-summary";
inline constexpr int kSummaryMajor = 1;
inline constexpr int kSummaryMinor = 3;

// The summary of `trace`, whose listed leak groups (the first kReportLeakGroups), failed
// allocations and top peak sites have their frames in `frames` or in the sites themselves.
nlohmann::ordered_json trace_summary_json(const TraceSummary& trace, const ResolvedStacks& frames);

// A trace as a summary gives it back: what the summary holds filled in (the stacks renumbered,
// their frames in `frames`), the rest empty.
struct SummaryInput {
  TraceSummary trace;
  ResolvedStacks frames;
};

// Reads the summary at `path`. Throws TraceError naming the file when it is not JSON, not a
// summary, of a newer major version, or lacks a field this version needs.
SummaryInput read_trace_summary(const std::string& path);

// Whether the file starts as a summary does: a JSON object whose first key is "format" with the
// value "gpumemtrace-summary" (how a directory's summaries are told from its other files).
bool starts_like_a_summary(const std::filesystem::path& path);

// Whether the file's first character that is not white space is '{' (a JSON object: a summary,
// when named on the command line, rather than a trace).
bool starts_like_json(const std::filesystem::path& path);

}  // namespace gmt::analyzer
