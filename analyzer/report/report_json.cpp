// SPDX-License-Identifier: Apache-2.0
// The JSON contract is documented in docs/commands.md; keys may be added, never removed or renamed.
#include <nlohmann/json.hpp>

#include "analyzer/model/leak_classes.h"
#include "analyzer/report/frames/frame_text.h"
#include "analyzer/report/hidden_pool_note.h"
#include "analyzer/report/history_text.h"
#include "analyzer/report/inference_report.h"
#include "analyzer/report/job_view.h"
#include "analyzer/report/json/json_fields.h"
#include "analyzer/report/report.h"
#include "analyzer/report/roles_report.h"
#include "analyzer/report/trace_end_text.h"
#include "analyzer/report/views_report.h"

namespace gmt::analyzer {
namespace {

nlohmann::ordered_json sites_json(const std::vector<ResolvedSite>& sites) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ResolvedSite& site : sites) {
    nlohmann::ordered_json row = {
        {"bytes", site.bytes}, {"count", site.count}, {"frames", frames_json(site.frames)}};
    if (site.allocator >= 0) {
      row["allocator"] = allocator_name(site.allocator);
      row["level"] = site.cache ? "cache" : "block";
    }
    if (const auto role = role_label(site.roles)) {
      row["role"] = *role;
      row["roles"] = role_bytes_json(site.roles);
    }
    out.push_back(std::move(row));
  }
  add_site_labels(out);
  return out;
}

// A caching allocator's OOM: its request, its free cache and largest free block.
void add_allocator_oom(const FailedAllocation& f, nlohmann::ordered_json& row) {
  if (f.allocator < 0) return;
  row["allocator"] = allocator_name(f.allocator);
  row["allocator_requested_bytes"] = f.allocator_requested_bytes;
  row["cache_free_bytes"] = f.cache_free_bytes;
  row["largest_free_block_bytes"] = f.largest_free_block_bytes;
  row["fragmentation"] = f.fragmented;
}

nlohmann::ordered_json usage_json(const KindUsage& u) {
  return {{"peak_bytes", u.peak_bytes}, {"live_at_exit_bytes", u.live_bytes}};
}

// The largest groups of allocations never freed, of every trace, largest first within a trace.
nlohmann::ordered_json leaks_json(const ReportInput& input) {
  nlohmann::ordered_json leaks = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < input.traces.size(); ++i) {
    const ResolvedStacks& frames = input.frames[i];
    const std::vector<LeakGroup>& groups = input.traces[i].leaks;
    for (std::size_t k = 0; k < groups.size() && k < kReportLeakGroups; ++k) {
      const LeakGroup& g = groups[k];
      const auto f = frames.find(g.stack);
      nlohmann::ordered_json row = {
          {"bytes", g.bytes},
          {"count", g.count},
          {"class", leak_class_name(g.leak_class)},
          {"frames", frames_json(f != frames.end() ? f->second : std::vector<SiteFrame>{})},
          {"trace", i},
          {"device", g.device},
          {"resident_bytes", g.resident_bytes}};
      if (g.leak_class == LeakClass::kProbableLeak) {
        row["growth_bytes_per_s"] = g.growth_bytes_per_s;
        row["freed_at_exit"] = g.freed_at_exit;
      }
      if (g.allocator >= 0) {
        row["allocator"] = allocator_name(g.allocator);
        row["level"] = g.stack == 0 && g.leak_class == LeakClass::kCached ? "cache" : "block";
      }
      leaks.push_back(std::move(row));
    }
  }
  add_site_labels(leaks);
  return leaks;
}

nlohmann::ordered_json ooms_json(const ReportInput& input) {
  nlohmann::ordered_json ooms = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < input.traces.size(); ++i) {
    const ResolvedStacks& frames = input.frames[i];
    for (const FailedAllocation& f : input.traces[i].failures) {
      const auto at = frames.find(f.stack);
      nlohmann::ordered_json row = failure_json(f);
      row["trace"] = i;
      row["kind"] = format::memory_kind_name(f.kind);
      row["frames"] = frames_json(at != frames.end() ? at->second : std::vector<SiteFrame>{});
      add_allocator_oom(f, row);
      ooms.push_back(std::move(row));
    }
  }
  add_site_labels(ooms);
  return ooms;
}

}  // namespace

void write_report_json(const ReportInput& input, std::ostream& out) {
  using nlohmann::ordered_json;
  ordered_json traces = ordered_json::array();
  ordered_json devices = ordered_json::array();
  std::map<format::MemoryKind, KindUsage> process_totals;
  for (std::size_t i = 0; i < input.traces.size(); ++i) {
    const TraceSummary& t = input.traces[i];
    ordered_json trace = {
        {"path", t.path},
        {"pid", t.pid},
        {"events", t.events},
        {"block_events", t.block_events()},
        {"truncated", t.truncated()},
        {"end", end_name(t.end)},
        {"ppid", t.ppid},
        {"host", t.host},
        {"argv", t.argv},
        {"duration_ns", t.duration_ns},
        {"unmatched_frees", t.unmatched_frees},
        {"failed_host_alloc_count", t.failed_host_alloc_count},
    };
    ordered_json threads = ordered_json::array();
    for (const auto& [tid, name] : t.threads) threads.push_back({{"tid", tid}, {"name", name}});
    trace["threads"] = threads;
    if (t.truncated()) {
      trace["end_offset"] = t.end_offset;
      trace["end_reason"] = t.end_reason;
    }
    if (t.end == TraceEnd::kStopped || t.end == TraceEnd::kFailed) {
      trace["end_reason"] = t.end_reason;
      trace["end_time_ns"] = t.stop_time_ns;
    }
    if (t.end == TraceEnd::kExec) {
      trace["exec"] = t.exec_program;
      trace["end_time_ns"] = t.exec_time_ns;
    }
    trace["signal"] = signal_json(died_of_signal(t) ? t.signal : std::nullopt);
    trace["open_at_end"] = open_at_end_json(t.open_at_end);
    if (t.dropped_records > 0) trace["dropped_records"] = t.dropped_records;
    if (t.history.max_size != 0) trace["history"] = history_json(t);
    if (!t.symbolization_warnings.empty())
      trace["symbolization_warnings"] = t.symbolization_warnings;
    trace["rank"] = rank_json(t);
    trace["env"] = t.env;
    trace["notes"] = t.notes;
    trace["view_samples"] = t.view_samples;
    trace["pools"] = {
        {"created", t.pools_created}, {"destroyed", t.pools_destroyed}, {"trimmed", t.pool_trims}};
    traces.push_back(std::move(trace));
    for (const auto& [kind, usage] : t.process_kinds) {
      KindUsage& total = process_totals[kind];
      total.live_bytes += usage.live_bytes;
      total.peak_bytes += usage.peak_bytes;
    }
    for (const auto& [ordinal, d] : t.devices) {
      ordered_json by_kind = ordered_json::object();
      for (const auto& [kind, usage] : d.by_kind) {
        by_kind[std::string(format::memory_kind_name(kind))] = usage_json(usage);
      }
      ordered_json device = {
          {"device", d.device}, {"peak_bytes", d.peak_bytes}, {"peak_time_ns", d.peak_time_ns}};
      device.update(device_counts_json(d));
      device.update({
          {"trace", i},
          {"pid", t.pid},
          {"teardown_free_count", d.teardown_free_count},
          {"by_kind", by_kind},
          {"peak_sites", sites_json(d.top_sites)},
          {"peak_phase", d.peak_phase},
          {"pci_bus_id", d.identity.pci_bus_id},
          {"nvml_index", d.identity.nvml_index},
          {"name", d.identity.name},
          {"views",
           {{"at_peak", views_json(d.views_at_peak, d.peak_bytes, by_library_at_peak(t, d))},
            {"at_exit", views_json(d.views_at_exit, d.live_bytes, by_library_at_exit(t, d))}}},
      });
      if (const auto pool = hidden_pool(t, d))
        device["hidden_pool"] = hidden_pool_json(*pool, d.device);
      if (d.roles_at_peak || d.roles_at_exit) {
        ordered_json by_role = ordered_json::object();
        ordered_json by_module = ordered_json::object();
        if (d.roles_at_peak) {
          by_role["at_peak"] = role_rows_json(*d.roles_at_peak);
          by_module["at_peak"] = module_rows_json(*d.roles_at_peak, kReportModules);
        }
        if (d.roles_at_exit) {
          by_role["at_exit"] = role_rows_json(*d.roles_at_exit);
          by_module["at_exit"] = module_rows_json(*d.roles_at_exit, kReportModules);
          by_role["at_exit_time_ns"] = d.roles_at_exit->time_ns;
          by_role["at_exit_is_program_end"] = d.roles_at_exit->at_program_end;
        }
        device["roles_recorded"] = t.roles_recorded;
        device["by_role"] = by_role;
        device["by_module"] = by_module;
        if (const auto inference = device_inference(d))
          device["inference"] = inference_json(*inference);
      }
      devices.push_back(std::move(device));
    }
  }
  ordered_json report = {{"traces", traces}, {"devices", devices}};
  // Memory of no device, summed over the traces; always present so that scripts can rely on it.
  for (format::MemoryKind kind :
       {format::MemoryKind::kHostPinned, format::MemoryKind::kHostRegistered,
        format::MemoryKind::kVmmReservation, format::MemoryKind::kHostVmm}) {
    report[std::string(format::memory_kind_name(kind))] = usage_json(process_totals[kind]);
  }
  report["leaks"] = leaks_json(input);
  uint64_t not_listed = 0;
  for (const TraceSummary& t : input.traces) {
    if (t.leaks.size() > kReportLeakGroups) not_listed += t.leaks.size() - kReportLeakGroups;
  }
  report["leaks_not_listed"] = not_listed;
  report["ooms"] = ooms_json(input);
  report["phases"] = phases_json(input.traces);
  if (input.traces.size() > 1) report["job"] = job_json(input);
  if (!input.unreadable.empty()) {
    ordered_json errors = ordered_json::array();
    for (const auto& u : input.unreadable) errors.push_back({{"path", u.path}, {"error", u.error}});
    report["errors"] = errors;
  }
  out << report.dump(2) << '\n';
}

}  // namespace gmt::analyzer
