// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/json/json_fields.h"

#include "analyzer/report/frames/frame_policy.h"
#include "analyzer/report/frames/frame_text.h"
#include "format/api.h"

namespace gmt::analyzer {

nlohmann::ordered_json retries_json(const std::vector<FailedRetry>& retries) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const FailedRetry& r : retries) {
    out.push_back(
        {{"time_ns", r.time_ns}, {"released_bytes", r.released_bytes}, {"error", r.error}});
  }
  return out;
}

nlohmann::ordered_json failure_json(const FailedAllocation& f) {
  return {{"time_ns", f.time_ns},
          {"device", f.device},
          {"api", format::api_name(f.api)},
          {"driver_api", format::api_name(f.driver_api)},
          {"requested_bytes", f.requested_bytes},
          {"live_bytes", f.live_bytes},
          {"driver_free_bytes", or_null(f.driver_free_bytes())},
          {"other_processes_bytes", or_null(f.other_processes_bytes())},
          {"retries", retries_json(f.retries)}};
}

nlohmann::ordered_json rank_json(const TraceSummary& trace) {
  return or_null(trace.rank);
}

nlohmann::ordered_json device_counts_json(const DeviceSummary& d) {
  return {{"live_at_exit_bytes", d.live_bytes},
          {"live_at_exit_count", d.live_count},
          {"alloc_count", d.alloc_count},
          {"free_count", d.free_count},
          {"failed_alloc_count", d.failed_alloc_count}};
}

nlohmann::ordered_json frames_json(const std::vector<SiteFrame>& frames) {
  using nlohmann::ordered_json;
  ordered_json out = ordered_json::array();
  // Every frame is kept; the one a text report starts from (frame_policy.h) is marked.
  const std::optional<std::size_t> user = first_user_frame(frames);
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const SiteFrame& f = frames[i];
    out.push_back({{"function", f.function},
                   {"file", f.file ? ordered_json(*f.file) : nullptr},
                   {"line", f.line ? ordered_json(*f.line) : nullptr},
                   {"module", f.module ? ordered_json(*f.module) : nullptr},
                   {"kind", f.kind},
                   {"user", user == i}});
  }
  return out;
}

void add_site_labels(nlohmann::ordered_json& rows) {
  std::vector<std::vector<SiteFrame>> frames;
  std::vector<nlohmann::ordered_json*> labelled;
  for (nlohmann::ordered_json& row : rows) {
    const auto it = row.find("frames");
    if (it == row.end() || !it->is_array()) continue;
    std::vector<SiteFrame>& stack = frames.emplace_back();
    for (const nlohmann::ordered_json& f : *it) {
      SiteFrame frame;
      frame.function = f.value("function", "");
      if (f.contains("file") && f["file"].is_string()) frame.file = f["file"].get<std::string>();
      if (f.contains("line") && f["line"].is_number_integer()) frame.line = f["line"].get<int>();
      if (f.contains("module") && f["module"].is_string())
        frame.module = f["module"].get<std::string>();
      frame.kind = f.value("kind", "native");
      stack.push_back(std::move(frame));
    }
    labelled.push_back(&row);
  }
  std::vector<const std::vector<SiteFrame>*> stacks;
  for (const std::vector<SiteFrame>& stack : frames) stacks.push_back(&stack);
  const std::vector<std::string> labels = site_labels(stacks);
  for (std::size_t i = 0; i < labelled.size(); ++i) (*labelled[i])["site"] = labels[i];
}

nlohmann::ordered_json site_stats_json(const SiteStats& site) {
  using nlohmann::ordered_json;
  ordered_json histogram = ordered_json::array();
  for (std::size_t b = 0; b < site.size_histogram.size(); ++b) {
    if (site.size_histogram[b] == 0) continue;
    const uint64_t min_bytes = b == 0 ? 0 : uint64_t{1} << (b - 1);
    histogram.push_back({{"min_bytes", min_bytes}, {"count", site.size_histogram[b]}});
  }
  return {{"allocations", site.allocations},
          {"temporary_count", site.temporaries},
          {"size_histogram", histogram}};
}

const SiteStats& site_of(const TraceSummary& trace, int device, uint32_t stack) {
  static const SiteStats kNone;
  const auto it = trace.sites.find(site_key(device, stack));
  return it != trace.sites.end() ? it->second : kNone;
}

}  // namespace gmt::analyzer
