// What the analysis commands (peak, leaks, oom, info, timeline, diff, check) share: loading a
// trace with its problems reported on stderr, and printing sites, frames and size classes.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analyzer/trace_reader.h"
#include "analyzer/trace_summary.h"

namespace gmt::analyzer {

// Summarizes `path` and names on `err` everything that had to be left out (the readable part is
// still returned). Throws TraceError when the file is not a readable trace at all.
TraceSummary load_trace(const std::string& path, std::ostream& err,
                        const SummaryOptions& options = {});

// "device 0", or "device unknown" for -1.
std::string device_name(int device);

// "function  file.cpp:12", or "function  (libfoo.so)" without debug information.
std::string frame_text(const SiteFrame& frame);

// Up to `shown` frames, one per line after `indent`, and how many more there are.
void write_frames(const std::vector<SiteFrame>& frames, std::size_t shown,
                  const std::string& indent, std::ostream& out);

// A value, or null for one the trace does not have.
template <class T>
nlohmann::ordered_json or_null(const std::optional<T>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

// What `report` and `oom` both say of a failed allocation: when, where, what was asked for
// and what the device held and had free then.
nlohmann::ordered_json failure_json(const FailedAllocation& f);

nlohmann::ordered_json frames_json(const std::vector<SiteFrame>& frames);

// A site's lifetime statistics: allocations made there, temporaries, sizes by power of two.
nlohmann::ordered_json site_stats_json(const SiteStats& site);

// The site of `stack` on `device`, or an empty one when the trace has none.
const SiteStats& site_of(const TraceSummary& trace, int device, uint32_t stack);

// ANSI colour for people at a terminal: only when `fd` is a terminal and NO_COLOR is not set.
bool colour_wanted(int fd);
std::string paint(const std::string& text, const char* sgr, bool colour);

}  // namespace gmt::analyzer
