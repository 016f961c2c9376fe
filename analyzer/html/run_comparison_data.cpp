// SPDX-License-Identifier: Apache-2.0
#include "analyzer/html/run_comparison_data.h"

#include <utility>

namespace gmt::analyzer {
namespace {

using nlohmann::ordered_json;

// One run's part: the page's data of the trace alone, its devices cut to their timelines.
ordered_json run_part(TraceSummary trace, const char* label, const HtmlLimits& limits) {
  ReportInput input;
  input.traces.push_back(std::move(trace));
  input.frames.emplace_back();
  input.summary_files.emplace_back();
  ordered_json page = html_report_data(input, limits, 1);
  ordered_json& t = page["traces"][0];
  ordered_json devices = ordered_json::array();
  for (ordered_json& d : t["devices"]) {
    const ordered_json& allocations = d["allocations"];
    devices.push_back({{"device", d["device"]},
                       {"name", d["name"]},
                       {"peak_bytes", d["peak_bytes"]},
                       {"peak_time_ns", d["peak_time_ns"]},
                       // The axis starts at the device's first allocation, as the page's does.
                       {"first_alloc_ns",
                        allocations.is_object() ? allocations["first_alloc_ns"] : ordered_json(0)},
                       {"timeline", std::move(d["timeline"])}});
  }
  return {{"label", label},
          {"path", t["path"]},
          {"pid", t["pid"]},
          {"host", t["host"]},
          {"argv", t["argv"]},
          {"duration_ns", t["duration_ns"]},
          {"events", t["events"]},
          {"phase_runs", std::move(t["phase_runs"])},
          {"step_runs", std::move(t["step_runs"])},
          {"devices", std::move(devices)}};
}

}  // namespace

ordered_json run_comparison_data(const ordered_json& diff, TraceSummary before, TraceSummary after,
                                 const HtmlLimits& limits) {
  // Only the timelines are kept: the allocation view's bands, the segments and the remedies'
  // replays would be read for nothing.
  HtmlLimits cut = limits;
  cut.remedies = false;
  cut.allocations.bands = 0;
  cut.allocations.moments = 0;
  cut.allocations.failures = 0;
  cut.allocations.segment_spans = 0;
  cut.allocations.series = 2;
  ordered_json runs = ordered_json::array(
      {run_part(std::move(before), "before", cut), run_part(std::move(after), "after", cut)});
  return {{"generator", "gpumemtrace diff"}, {"diff", diff}, {"runs", std::move(runs)}};
}

}  // namespace gmt::analyzer
