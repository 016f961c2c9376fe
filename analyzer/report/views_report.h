// SPDX-License-Identifier: Apache-2.0
// How reports present the views: the table that names each slice between what the framework
// says, what was tracked, what NVML and the driver say; and the phases.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {

// Device-resident bytes by owning library, live at the device's peak / at the end of the trace.
std::map<std::string, uint64_t> by_library_at_peak(const TraceSummary& trace,
                                                   const DeviceSummary& device);
std::map<std::string, uint64_t> by_library_at_exit(const TraceSummary& trace,
                                                   const DeviceSummary& device);

// The JSON contract's V (docs/commands.md): every view field, null when it was not read. `tracked`
// is the device's tracked bytes at the view's moment (its peak, the end), which `by_library` adds
// up to; the sample's own tracked bytes are `sample_tracked_bytes`.
nlohmann::ordered_json views_json(const std::optional<ViewValues>& views, uint64_t tracked,
                                  const std::map<std::string, uint64_t>& by_library);

nlohmann::ordered_json phases_json(const std::vector<TraceSummary>& traces);

// "views at peak (12 ms after it)" and one line per view and named difference; without views,
// the moment's tracked bytes and `absent`, why there are none.
inline constexpr const char* kNoViewSample =
    "no sample of the other views (sampler off, or the process ended first)";
inline constexpr const char* kViewsNotInSummary =
    "the other views are not kept in a summary (report the trace itself for them)";
void write_views_text(const std::string& title, const std::optional<ViewValues>& views,
                      uint64_t tracked, const std::map<std::string, uint64_t>& by_library,
                      std::ostream& out, const char* absent = kNoViewSample);
void write_phases_text(const TraceSummary& trace, std::ostream& out);

}  // namespace gmt::analyzer
