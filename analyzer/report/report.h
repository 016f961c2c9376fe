// SPDX-License-Identifier: Apache-2.0
// The `report` command's two presentations of the same summaries.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "analyzer/model/trace_summary.h"
#include "analyzer/report/frames/frame_policy.h"
#include "analyzer/report/frames/stack_frames.h"

namespace gmt::analyzer {

// A trace that could not be read at all, reported beside those that could.
struct UnreadableTrace {
  std::string path;
  std::string error;
};

// Leak groups per trace that `report` lists with their frames, largest first (`gpumemtrace
// leaks` lists them all): a summary of a program with thousands of allocation sites would
// otherwise be tens of megabytes of JSON.
inline constexpr std::size_t kReportLeakGroups = 100;

struct ReportInput {
  std::vector<TraceSummary> traces;
  // For each trace, the frames of the stacks its listed leaks and failed allocations name.
  std::vector<ResolvedStacks> frames;
  // For each trace, the summary it was read from (trace_summary_json.h), "" when read from the
  // trace: only what a summary holds is there, and no records can be read again.
  std::vector<std::string> summary_files;
  std::vector<UnreadableTrace> unreadable;
  // One line for each input left out as the same process as another (a trace and its own
  // summary, or two copies of one trace): "s.json is the summary of t.gmt (pid 12): counted
  // once". The commands print them on stderr.
  std::vector<std::string> same_process;
};

// `paths` are trace files or summaries (`gpumemtrace summarize`, told by their content), or
// directories whose traces (*.gmt and *.gmt.<pid> files that start with the trace magic) and
// summaries (files that start as one, starts_like_a_summary) are all read, in name order; a file
// named twice is read once, and so is a process given twice (a trace and its summary, in a
// directory or on the command line; two copies of a trace): told by its host, pid and the start
// of its trace, the trace kept over the summary, each one left out named in `same_process`. A
// directory without either is in `unreadable` ("no traces in DIR").
// Traces are read by `jobs` workers, one trace each (0: worker_count(), $GPUMEMTRACE_JOBS or one
// per CPU); the result is the same, in the same order, whatever the number.
ReportInput load_traces(const std::vector<std::string>& paths, unsigned jobs = 0);

void write_report_json(const ReportInput& input, std::ostream& out);
// Stacks as frame_policy.h shows them in `frames` mode.
void write_report_text(const ReportInput& input, FrameMode frames, std::ostream& out);

}  // namespace gmt::analyzer
