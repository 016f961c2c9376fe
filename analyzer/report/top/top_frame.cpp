// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/top/top_frame.h"

#include <algorithm>
#include <set>

#include "analyzer/model/leak_classes.h"
#include "analyzer/model/live/live_device.h"
#include "analyzer/model/owner_library.h"
#include "analyzer/report/frames/frame_policy.h"
#include "analyzer/report/frames/frame_text.h"
#include "analyzer/report/json/json_fields.h"

namespace gmt::analyzer {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::size_t kSitesShown = 5;

// The frames of a site's stack; none for a cache row or a stack not symbolized.
const std::vector<SiteFrame>& site_frames(const LiveSite& site, const ResolvedStacks& stacks) {
  static const std::vector<SiteFrame> kNone;
  auto it = stacks.find(site.stack);
  return site.cache || it == stacks.end() ? kNone : it->second;
}

// `label`: the site's one-line name among the rows shown (site_labels, frame_text.h).
Json site_json(const LiveSite& site, const ResolvedStacks& stacks, OwnerLibraryCache& owners,
               const std::string& label) {
  const std::vector<SiteFrame>& frames = site_frames(site, stacks);
  std::string frame = label.empty() ? std::string("(no stack)") : label;
  if (site.cache) frame = std::string("(") + allocator_name(site.allocator) + " cache: free)";
  Json row = {{"bytes", site.bytes},
              {"count", site.count},
              {"library", site.allocator >= 0 ? std::string(allocator_name(site.allocator))
                                              : owners.of(site.stack)},
              {"frame", std::move(frame)},
              {"frames", frames_json(frames)}};
  if (site.allocator >= 0) {
    row["allocator"] = allocator_name(site.allocator);
    row["level"] = site.cache ? "cache" : "block";
  }
  return row;
}

Json device_json(const LiveTrace& t, const ResolvedStacks& stacks, OwnerLibraryCache& owners,
                 int ordinal, const DeviceSummary& d, uint64_t now_ns) {
  const LiveDevice live = live_device(t, owners, ordinal, now_ns);
  Json by_kind = Json::object();
  for (const auto& [kind, bytes] : live.by_kind) by_kind[kind] = bytes;
  Json by_library = Json::object();
  for (const auto& [name, bytes] : live.by_library) by_library[name] = bytes;
  Json top_sites = Json::array();
  const std::vector<LiveSite> sites = live_sites(t.summary(), ordinal);
  const std::size_t shown = std::min(sites.size(), kSitesShown);
  std::vector<const std::vector<SiteFrame>*> shown_frames;
  for (std::size_t i = 0; i < shown; ++i) shown_frames.push_back(&site_frames(sites[i], stacks));
  const std::vector<std::string> labels = site_labels(shown_frames);
  for (std::size_t i = 0; i < shown; ++i)
    top_sites.push_back(site_json(sites[i], stacks, owners, labels[i]));
  const std::optional<ViewValues>& v = d.views_at_exit;
  return {{"device", ordinal},
          {"live_bytes", d.live_bytes},
          {"live_count", d.live_count},
          {"peak_bytes", d.peak_bytes},
          {"peak_time_ns", d.peak_time_ns},
          {"growth_1m_bytes", or_null(live.growth_1m_bytes)},
          {"alloc_count", d.alloc_count},
          {"free_count", d.free_count},
          {"failed_alloc_count", d.failed_alloc_count},
          {"by_kind", std::move(by_kind)},
          {"by_library", std::move(by_library)},
          {"framework_allocated_bytes", or_null(live.framework_allocated_bytes)},
          {"framework_reserved_bytes", or_null(live.framework_reserved_bytes)},
          {"nvml_process_bytes", v ? or_null(v->nvml_process_bytes) : Json(nullptr)},
          {"nvml_device_used_bytes", v ? or_null(v->nvml_device_used_bytes) : Json(nullptr)},
          {"nvml_device_total_bytes", v ? or_null(v->nvml_device_total_bytes) : Json(nullptr)},
          {"driver_used_bytes", v ? or_null(v->driver_used_bytes) : Json(nullptr)},
          {"driver_total_bytes", v ? or_null(v->driver_total_bytes) : Json(nullptr)},
          {"views_time_ns", v ? Json(v->time_ns) : Json(nullptr)},
          {"top_sites", std::move(top_sites)}};
}

// Most first by the chosen figure summed over the devices shown (an unknown growth counts as
// none), then by pid.
void sort_processes(Json& processes, TopSort sort) {
  auto key = [&](const Json& p) {
    int64_t sum = 0;
    for (const Json& d : p["devices"]) {
      const Json& v = sort == TopSort::kNow    ? d["live_bytes"]
                      : sort == TopSort::kPeak ? d["peak_bytes"]
                                               : d["growth_1m_bytes"];
      if (!v.is_null()) sum += v.get<int64_t>();
    }
    return sum;
  };
  std::vector<Json> list(processes.begin(), processes.end());
  std::stable_sort(list.begin(), list.end(), [&](const Json& a, const Json& b) {
    const int64_t ka = key(a), kb = key(b);
    if (ka != kb) return ka > kb;
    return a["pid"].get<uint64_t>() < b["pid"].get<uint64_t>();
  });
  processes = Json(list);
}

}  // namespace

const char* top_sort_name(TopSort sort) {
  switch (sort) {
    case TopSort::kNow:
      return "now";
    case TopSort::kPeak:
      return "peak";
    case TopSort::kGrowth:
      return "growth";
  }
  return "now";
}

void TopFrames::resolve_new_stacks(const LiveWatch& watch) {
  for (const auto& [path, trace] : watch.traces()) {
    if (!trace->described()) continue;
    Symbolized& known = symbolized_[path];
    std::vector<uint32_t> missing;
    for (uint32_t stack : live_stacks(trace->summary())) {
      if (!known.stacks.count(stack)) missing.push_back(stack);
    }
    if (missing.empty()) continue;
    ResolvedStacks more = resolve_stacks(trace->summary(), missing, known.warnings);
    for (uint32_t id : missing) known.stacks[id] = std::move(more[id]);
  }
}

Json TopFrames::frame(const LiveWatch& watch, const TopChoice& choice, const TopMoment& moment) {
  Json processes = Json::array();
  Json errors = Json::array();
  std::map<int, uint64_t> device_totals;
  uint64_t total_live = 0, total_failed = 0, running = 0;
  for (const auto& [path, trace] : watch.traces()) {
    const LiveTrace& t = *trace;
    if (!t.error().empty() && !t.described()) {
      errors.push_back({{"path", path}, {"error", t.error()}});
      continue;
    }
    const TraceSummary& s = t.summary();
    const bool local = s.host == moment.host;
    const std::string state =
        live_state(t, local && moment.process_gone && moment.process_gone(process_identity(s)));
    if (state == "running" || state == "starting") ++running;
    const uint64_t now_ns =
        state == "running" && local && t.mono_start_ns() > 0
            ? std::max(t.latest_time_ns(), moment.monotonic_ns - t.mono_start_ns())
            : t.latest_time_ns();
    Json p = {{"path", path},
              {"pid", s.pid},
              {"rank", s.rank ? Json(*s.rank) : Json(nullptr)},
              {"host", s.host},
              {"argv", s.argv},
              {"state", state},
              {"records", t.records_applied()},
              {"trace_time_ns", now_ns}};
    OwnerLibraryCache owners(s);
    const ResolvedStacks& stacks = symbolized_[path].stacks;
    uint64_t failed = s.failed_host_alloc_count;
    Json devices = Json::array();
    for (const auto& [ordinal, d] : s.devices) {
      failed += d.failed_alloc_count;
      if (choice.device && *choice.device != ordinal) continue;
      devices.push_back(device_json(t, stacks, owners, ordinal, d, now_ns));
      device_totals[ordinal] += d.live_bytes;
      total_live += d.live_bytes;
    }
    total_failed += failed;
    p["failed_alloc_count"] = failed;
    p["devices"] = std::move(devices);
    p["open_phases"] = t.open_phases();
    if (!t.stop_reason().empty()) p["stop_reason"] = t.stop_reason();
    if (t.behind().times > 0) {
      p["fell_behind"] = {{"times", t.behind().times},
                          {"records_missed", t.behind().records_missed},
                          {"history_from_ns", t.behind().history_from_ns}};
    }
    processes.push_back(std::move(p));
  }
  sort_processes(processes, choice.sort);
  Json totals_devices = Json::array();
  for (const auto& [ordinal, bytes] : device_totals)
    totals_devices.push_back({{"device", ordinal}, {"live_bytes", bytes}});
  Json frame = {{"time_unix_ns", moment.unix_ns},
                {"sort", top_sort_name(choice.sort)},
                {"device_filter", choice.device ? Json(*choice.device) : Json(nullptr)},
                {"processes", std::move(processes)},
                {"totals",
                 {{"processes", watch.size() - errors.size()},
                  {"running", running},
                  {"live_bytes", total_live},
                  {"failed_alloc_count", total_failed},
                  {"devices", std::move(totals_devices)}}}};
  if (!errors.empty()) frame["errors"] = std::move(errors);
  return frame;
}

std::vector<int> top_devices(const LiveWatch& watch) {
  std::set<int> devices;
  for (const auto& [path, trace] : watch.traces()) {
    for (const auto& [ordinal, d] : trace->summary().devices) devices.insert(ordinal);
  }
  return {devices.begin(), devices.end()};
}

}  // namespace gmt::analyzer
