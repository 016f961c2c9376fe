// SPDX-License-Identifier: Apache-2.0
// The writers of `gpumemtrace export`, one file each (export_<format>.cpp). Each reads the
// model of one trace; those that need more than the model keeps (bytes allocated per site, the
// views over time, addresses) read it in one more pass over the trace file at `trace.path`.
#pragma once

#include <ostream>

#include "analyzer/model/trace_summary.h"
#include "analyzer/report/frames/frame_policy.h"
#include "analyzer/report/report.h"

namespace gmt::analyzer {

enum class ProfileWhat { kPeak, kLeaks };

// The flame-graph formats (folded, speedscope, pprof, memviz) show each stack as frame_policy.h
// says: from the first user frame, the frames below it one `via` frame, unless `frames` is
// FrameMode::kAll.

// flamegraph.pl's folded stacks: what was live at each device's peak, or never freed.
void write_folded(TraceSummary& trace, ProfileWhat what, FrameMode frames, std::ostream& out);

// speedscope's JSON file format: the peak and the leaks as two sampled profiles, in bytes.
void write_speedscope(TraceSummary& trace, FrameMode frames, std::ostream& out);

// pprof's profile.proto, gzipped: in use at the peak, allocated over the run.
void write_pprof(TraceSummary& trace, FrameMode frames, std::ostream& out);

// Chrome's trace-event JSON, for ui.perfetto.dev: counters, phases, the peak and the OOMs.
void write_perfetto(TraceSummary& trace, std::ostream& out);

// A pickle that PyTorch's memory viewer (MemoryViz.js, torch.cuda._memory_viz) loads.
void write_memviz(TraceSummary& trace, FrameMode frames, std::ostream& out);

// JSON Lines for DuckDB, pandas or Spark: one row per process, device, site and class (the top
// sites at the device's peak, the listed leak groups, the failed allocations by site) of every
// trace or summary in `input`. docs/export.md lists the columns.
void write_jsonl(const ReportInput& input, std::ostream& out);

}  // namespace gmt::analyzer
