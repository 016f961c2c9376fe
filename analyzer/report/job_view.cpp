// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/job_view.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <string>

#include "analyzer/model/leak_classes.h"
#include "analyzer/report/byte_size.h"
#include "analyzer/report/frames/frame_text.h"
#include "analyzer/report/json/json_fields.h"

namespace gmt::analyzer {
namespace {

using nlohmann::ordered_json;

// What makes two ranks' sites the same site: the function, file and line of every frame (not the
// module's load address, which differs from process to process).
std::string site_key(const std::vector<SiteFrame>& frames) {
  std::string key;
  for (const SiteFrame& f : frames) {
    key += f.kind;
    key += '\x1f';
    key += f.function;
    key += '\x1f';
    key += f.file.value_or("");
    key += '\x1f';
    key += std::to_string(f.line.value_or(0));
    key += '\x1e';
  }
  return key;
}

}  // namespace

std::string site_identity(const std::vector<SiteFrame>& frames) {
  return site_key(frames);
}

std::vector<std::string> leak_site_names(const JobView& view) {
  std::vector<const std::vector<SiteFrame>*> stacks;
  for (const JobLeakSite& site : view.leak_sites) stacks.push_back(&site.frames);
  std::vector<std::string> names = site_labels(stacks);
  for (std::string& name : names) {
    if (name.empty()) name = "(no stack)";
  }
  return names;
}

namespace {

// A site named alone (the job's first failed allocation).
std::string site_name(const std::vector<SiteFrame>& frames) {
  const std::string label = site_label(frames);
  return label.empty() ? "(no stack)" : label;
}

}  // namespace

std::string who(const TraceSummary& t) {
  std::string image;
  if (t.exec_image == 1) image = "after exec";
  if (t.exec_image > 1) image = "after exec " + std::to_string(t.exec_image);
  const std::string pid = "pid " + std::to_string(t.pid);
  if (t.rank)
    return "rank " + std::to_string(*t.rank) + " (" + pid + (image.empty() ? "" : ", " + image) +
           ")";
  return pid + (image.empty() ? "" : " (" + image + ")");
}

std::size_t process_count(const std::vector<TraceSummary>& traces) {
  return static_cast<std::size_t>(std::count_if(
      traces.begin(), traces.end(), [](const TraceSummary& t) { return t.exec_image == 0; }));
}

namespace {

std::string wall_clock(uint64_t ns) {
  const std::time_t seconds = static_cast<std::time_t>(ns / 1000000000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02d %02d:%02d:%02d.%03u UTC", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<unsigned>(ns % 1000000000 / 1000000));
  return text;
}

std::vector<SiteFrame> frames_of(const ReportInput& input, std::size_t trace, uint32_t stack) {
  if (trace >= input.frames.size()) return {};
  const auto found = input.frames[trace].find(stack);
  return found != input.frames[trace].end() ? found->second : std::vector<SiteFrame>{};
}

}  // namespace

JobView job_view(const ReportInput& input) {
  JobView view;
  for (std::size_t i = 0; i < input.traces.size(); ++i) {
    const TraceSummary& t = input.traces[i];
    for (const auto& [ordinal, d] : t.devices) {
      // As the table of processes: host memory with nothing resident is no row of its own.
      if (ordinal < 0 && d.peak_bytes == 0) continue;
      view.rows.push_back({i, ordinal, d.peak_bytes, leaked_on(t, ordinal), d.failed_alloc_count});
      if (!view.highest || d.peak_bytes > view.rows[*view.highest].peak_bytes)
        view.highest = view.rows.size() - 1;
    }
  }
  if (!view.rows.empty()) {
    std::vector<uint64_t> peaks;
    for (const JobRow& r : view.rows) peaks.push_back(r.peak_bytes);
    std::sort(peaks.begin(), peaks.end());
    const std::size_t mid = peaks.size() / 2;
    view.median_peak_bytes =
        peaks.size() % 2 == 1 ? peaks[mid] : peaks[mid - 1] + (peaks[mid] - peaks[mid - 1]) / 2;
    if (view.median_peak_bytes > 0) {
      view.spread = static_cast<double>(view.rows[*view.highest].peak_bytes) /
                    static_cast<double>(view.median_peak_bytes);
    }
  }

  // Leak sites: the groups `report` lists with frames (the largest of each trace), by site.
  std::map<std::string, std::size_t> site_index;
  for (std::size_t i = 0; i < input.traces.size(); ++i) {
    const TraceSummary& t = input.traces[i];
    std::map<std::size_t, uint64_t> in_trace;  // site -> bytes of this trace
    for (std::size_t g = 0; g < t.leaks.size() && g < kReportLeakGroups; ++g) {
      const LeakGroup& group = t.leaks[g];
      if (!unintended(group.leak_class)) continue;
      std::vector<SiteFrame> frames = frames_of(input, i, group.stack);
      const auto [at, added] = site_index.emplace(site_key(frames), view.leak_sites.size());
      if (added) view.leak_sites.push_back({std::move(frames), {}, 0, 0, 0});
      in_trace[at->second] += group.bytes;
    }
    for (const auto& [site, bytes] : in_trace) {
      JobLeakSite& s = view.leak_sites[site];
      s.min_bytes = s.traces.empty() ? bytes : std::min(s.min_bytes, bytes);
      s.max_bytes = std::max(s.max_bytes, bytes);
      s.traces.push_back(i);
      s.bytes += bytes;
    }
  }
  // Largest first; ties by the number of ranks, then as first found (stable).
  std::stable_sort(view.leak_sites.begin(), view.leak_sites.end(),
                   [](const JobLeakSite& a, const JobLeakSite& b) {
                     return a.bytes != b.bytes ? a.bytes > b.bytes
                                               : a.traces.size() > b.traces.size();
                   });

  for (std::size_t i = 0; i < input.traces.size(); ++i) {
    const TraceSummary& t = input.traces[i];
    for (std::size_t f = 0; f < t.failures.size(); ++f) {
      const uint64_t wall = t.wall_start_ns + t.failures[f].time_ns;
      if (!view.first_oom || wall < view.first_oom->wall_time_ns)
        view.first_oom = JobOom{i, f, wall};
    }
  }
  return view;
}

void write_job_text(const ReportInput& input, std::ostream& out) {
  const JobView view = job_view(input);
  if (view.highest) {
    const JobRow& top = view.rows[*view.highest];
    char spread[32] = "";
    if (view.spread) std::snprintf(spread, sizeof spread, ", spread %.2fx", *view.spread);
    out << "  highest peak  " << human_bytes(top.peak_bytes) << " on "
        << who(input.traces[top.trace]) << " " << device_name(top.device) << ": "
        << human_bytes(top.peak_bytes - view.median_peak_bytes) << " over the median "
        << human_bytes(view.median_peak_bytes) << spread << "\n";
  }
  if (view.first_oom) {
    const TraceSummary& t = input.traces[view.first_oom->trace];
    const FailedAllocation& f = t.failures[view.first_oom->failure];
    out << "  first OOM     " << wall_clock(view.first_oom->wall_time_ns) << " on " << who(t) << " "
        << device_name(f.device) << ": " << human_bytes(f.requested_bytes) << " asked in "
        << site_name(frames_of(input, view.first_oom->trace, f.stack)) << "\n";
  }
  if (!view.leak_sites.empty()) out << "  never freed, by site across the processes\n";
  const std::vector<std::string> names = leak_site_names(view);
  for (std::size_t s = 0; s < view.leak_sites.size() && s < kJobLeakSitesText; ++s) {
    const JobLeakSite& site = view.leak_sites[s];
    out << "    " << names[s] << " \u2014 " << site.traces.size() << " of " << input.traces.size()
        << (input.traces.size() == 1 ? " process" : " processes") << ", ";
    if (site.min_bytes == site.max_bytes) {
      out << human_bytes(site.min_bytes) << " each\n";
    } else {
      out << human_bytes(site.min_bytes) << " to " << human_bytes(site.max_bytes) << " each, "
          << human_bytes(site.bytes) << " in all\n";
    }
  }
  if (view.leak_sites.size() > kJobLeakSitesText) {
    out << "    and " << view.leak_sites.size() - kJobLeakSitesText << " more sites\n";
  }
}

ordered_json job_json(const ReportInput& input) {
  const JobView view = job_view(input);
  const auto process = [&](std::size_t trace) {
    const TraceSummary& t = input.traces[trace];
    return ordered_json{{"trace", trace}, {"pid", t.pid}, {"rank", rank_json(t)}};
  };
  ordered_json job = {{"processes", process_count(input.traces)}, {"traces", input.traces.size()}};
  ordered_json rows = ordered_json::array();
  for (const JobRow& r : view.rows) {
    ordered_json row = process(r.trace);
    row["device"] = r.device;
    row["peak_bytes"] = r.peak_bytes;
    row["leaked_bytes"] = r.leaked_bytes;
    row["failed_alloc_count"] = r.failed_alloc_count;
    rows.push_back(std::move(row));
  }
  job["devices"] = rows;
  job["median_peak_bytes"] = view.median_peak_bytes;
  if (view.highest) {
    const JobRow& top = view.rows[*view.highest];
    ordered_json highest = process(top.trace);
    highest["device"] = top.device;
    highest["peak_bytes"] = top.peak_bytes;
    highest["excess_over_median_bytes"] = top.peak_bytes - view.median_peak_bytes;
    job["highest_peak"] = highest;
  } else {
    job["highest_peak"] = nullptr;
  }
  job["spread"] = or_null(view.spread);
  ordered_json sites = ordered_json::array();
  const std::vector<std::string> names = leak_site_names(view);
  for (std::size_t s = 0; s < view.leak_sites.size() && s < kJobLeakSitesJson; ++s) {
    const JobLeakSite& site = view.leak_sites[s];
    sites.push_back({{"site", names[s]},
                     {"bytes", site.bytes},
                     {"processes", site.traces.size()},
                     {"min_bytes", site.min_bytes},
                     {"max_bytes", site.max_bytes},
                     {"traces", site.traces},
                     {"frames", frames_json(site.frames)}});
  }
  job["leak_sites"] = sites;
  job["leak_sites_not_listed"] =
      view.leak_sites.size() > kJobLeakSitesJson ? view.leak_sites.size() - kJobLeakSitesJson : 0;
  if (view.first_oom) {
    const TraceSummary& t = input.traces[view.first_oom->trace];
    const FailedAllocation& f = t.failures[view.first_oom->failure];
    ordered_json oom = process(view.first_oom->trace);
    oom["failure"] = view.first_oom->failure;
    oom["device"] = f.device;
    oom["wall_time_ns"] = view.first_oom->wall_time_ns;
    oom["time_ns"] = f.time_ns;
    oom["requested_bytes"] = f.requested_bytes;
    const std::vector<SiteFrame> frames = frames_of(input, view.first_oom->trace, f.stack);
    oom["site"] = site_name(frames);
    oom["frames"] = frames_json(frames);
    job["first_oom"] = oom;
  } else {
    job["first_oom"] = nullptr;
  }
  return job;
}

}  // namespace gmt::analyzer
