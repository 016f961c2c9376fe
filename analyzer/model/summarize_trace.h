// SPDX-License-Identifier: Apache-2.0
// Reads one trace file from start to end through the replay model.
#pragma once

#include <ostream>

#include <cstdint>
#include <span>
#include <string>

#include "analyzer/model/trace_summary.h"
#include "format/trace_reader.h"

namespace gmt::analyzer {

// Throws TraceError when the file is not a readable trace at all (missing, empty, not a trace,
// unsupported version). A trace that is cut short or damaged part-way is not an error: the
// summary covers everything before the damage and says where and why reading stopped.
//
// Two passes: the second knows the peaks and the duration, and takes what was live at each
// peak, the samples that tell growing sites (leak classes) and, when `timeline_resolution_ns` is
// not 0, the timeline (at that resolution or the coarser one its bucket limit needs).
struct SummaryOptions {
  uint64_t timeline_resolution_ns = 0;
  std::ostream* progress = nullptr;  // where to draw a progress bar (progress_bar.h); none if null
  // Records read on a second thread while the replay runs, where two CPUs can be used
  // (record_pipeline.h); off, everything runs on the caller's thread.
  bool read_ahead = true;
  // The devices' peaks are those of this phase (Replay::peaks_in_phase()); "" for the trace's.
  std::string peak_phase;
};
TraceSummary summarize_trace(const std::string& path, const SummaryOptions& options = {});

// The same for a trace already in memory (`bytes` is the whole file); `name` stands for the
// file in errors and in the summary's path. For callers that hold the bytes, such as the fuzzer.
// `pages` is for a file mapping only (format::PageAccess).
TraceSummary summarize_trace_bytes(std::span<const uint8_t> bytes, const std::string& name,
                                   const SummaryOptions& options = {},
                                   format::PageAccess pages = {});

}  // namespace gmt::analyzer
