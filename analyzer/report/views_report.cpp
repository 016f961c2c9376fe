// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/views_report.h"

#include <iomanip>

#include "analyzer/model/owner_library.h"
#include "analyzer/report/byte_size.h"
#include "analyzer/report/frames/frame_text.h"
#include "analyzer/report/json/json_fields.h"

namespace gmt::analyzer {

using nlohmann::ordered_json;

std::map<std::string, uint64_t> by_library_at_peak(const TraceSummary& trace,
                                                   const DeviceSummary& device) {
  OwnerLibraryCache owners(trace);
  std::map<std::string, uint64_t> out;
  for (const PeakSite& site : device.peak_sites) out[owners.of(site.stack)] += site.bytes;
  return out;
}

std::map<std::string, uint64_t> by_library_at_exit(const TraceSummary& trace,
                                                   const DeviceSummary& device) {
  OwnerLibraryCache owners(trace);
  std::map<std::string, uint64_t> out;
  for (const auto& [key, site] : trace.sites) {
    if (site.device != device.device || site.live_resident_bytes == 0) continue;
    out[owners.of(site.stack)] += site.live_resident_bytes;
  }
  return out;
}

ordered_json views_json(const std::optional<ViewValues>& views, uint64_t tracked,
                        const std::map<std::string, uint64_t>& by_library) {
  ViewValues v;
  v.tracked_bytes = tracked;
  if (views) v = *views;
  // tracked_bytes and by_library are the view's moment's (the peak, the end); the sample's own
  // tracked bytes, which the differences pair with the sampled views, are apart.
  ordered_json out = {
      {"framework_allocated_bytes", or_null(v.framework_allocated_bytes)},
      {"framework_reserved_bytes", or_null(v.framework_reserved_bytes)},
      {"tracked_bytes", tracked},
      {"sample_tracked_bytes", views ? ordered_json(v.tracked_bytes) : ordered_json(nullptr)},
      {"nvml_process_bytes", or_null(v.nvml_process_bytes)},
      {"driver_used_bytes", or_null(v.driver_used_bytes)},
      {"nvml_device_used_bytes", or_null(v.nvml_device_used_bytes)},
      {"context_overhead_bytes", or_null(v.context_overhead_bytes())},
      {"other_processes_bytes", or_null(v.other_processes_bytes())},
      {"framework_cache_bytes", or_null(v.framework_cache_bytes())},
      {"outside_framework_bytes", or_null(v.outside_framework_bytes())},
      {"pool_reserved_bytes", or_null(v.pool_reserved_bytes)},
      {"pool_used_bytes", or_null(v.pool_used_bytes)},
      {"graph_reserved_bytes", or_null(v.graph_reserved_bytes)},
      {"graph_used_bytes", or_null(v.graph_used_bytes)},
      {"by_library", by_library},
      {"sample_time_ns", views ? ordered_json(v.time_ns) : ordered_json(nullptr)},
      {"exact", views ? v.exact : false},
  };
  return out;
}

ordered_json phases_json(const std::vector<TraceSummary>& traces) {
  ordered_json out = ordered_json::array();
  for (std::size_t i = 0; i < traces.size(); ++i) {
    for (const PhaseStats& p : traces[i].phases) {
      out.push_back({{"name", p.name},
                     {"device", p.device},
                     {"peak_bytes", p.peak_bytes},
                     {"growth_bytes", p.growth_bytes},
                     {"calls", p.calls},
                     {"trace", i}});
    }
  }
  return out;
}

namespace {

std::string signed_bytes(int64_t bytes) {
  if (bytes >= 0) return human_bytes(static_cast<uint64_t>(bytes));
  // Appended, not "-" + ...: GCC 12 warns falsely (-Wrestrict) on that at -O3. The negation in
  // unsigned arithmetic holds INT64_MIN too.
  std::string text = "-";
  text += human_bytes(0 - static_cast<uint64_t>(bytes));
  return text;
}

void row(std::ostream& out, const std::string& label, const std::string& value,
         const std::string& note = "") {
  out << "      " << std::left << std::setw(34) << label << std::right << std::setw(12) << value;
  if (!note.empty()) out << "  " << note;
  out << "\n";
}

template <class T>
std::string shown(const std::optional<T>& v) {
  if (!v) return "missing";
  if constexpr (std::is_signed_v<T>) {
    return signed_bytes(*v);
  } else {
    return human_bytes(*v);
  }
}

}  // namespace

void write_views_text(const std::string& title, const std::optional<ViewValues>& views,
                      uint64_t tracked, const std::map<std::string, uint64_t>& by_library,
                      std::ostream& out, const char* absent) {
  out << "    " << title;
  if (!views) {
    // Nothing was read at that moment: the tracked bytes alone, not a row of "missing" per view.
    out << ": " << absent << "\n";
    row(out, "tracked (all allocations)", human_bytes(tracked));
    for (const auto& [library, bytes] : by_library)
      row(out, "  owned by " + library, human_bytes(bytes));
    return;
  }
  const ViewValues& v = *views;
  out << (v.exact ? "" : " (allocations changed while the views were read: approximate)") << "\n";
  // A program without a framework (or one that reported nothing) gets one line, not a row of
  // "missing" for each of the framework's figures and the differences made of them.
  const bool framework = v.framework_allocated_bytes || v.framework_reserved_bytes;
  if (framework) {
    row(out, "framework allocated", shown(v.framework_allocated_bytes));
    row(out, "framework reserved", shown(v.framework_reserved_bytes));
  } else {
    row(out, "framework", "none",
        "(no caching allocator's block events, no gpumemtrace_framework_view report)");
  }
  // The view's moment's bytes, with the libraries that hold them; the sample's beside them
  // when it was taken with other bytes live (the differences below are the sample's).
  row(out, "tracked (all allocations)", human_bytes(tracked));
  for (const auto& [library, bytes] : by_library)
    row(out, "  owned by " + library, human_bytes(bytes));
  if (v.tracked_bytes != tracked) row(out, "tracked when sampled", human_bytes(v.tracked_bytes));
  row(out, "NVML, this process", shown(v.nvml_process_bytes));
  row(out, "driver used (cuMemGetInfo)", shown(v.driver_used_bytes));
  row(out, "NVML, whole device", shown(v.nvml_device_used_bytes));
  // Read only once the process has such memory.
  if (v.pool_reserved_bytes || v.pool_used_bytes) {
    row(out, "stream-ordered pool reserved", shown(v.pool_reserved_bytes),
        "used " + shown(v.pool_used_bytes));
  }
  if (v.graph_reserved_bytes || v.graph_used_bytes) {
    row(out, "graph memory reserved", shown(v.graph_reserved_bytes),
        "used " + shown(v.graph_used_bytes));
  }
  out << "      where the differences go:\n";
  if (framework) {
    row(out, "  framework cache (reserved-alloc)", shown(v.framework_cache_bytes()));
    row(out, "  outside the framework", shown(v.outside_framework_bytes()),
        "tracked - framework reserved");
  }
  row(out, "  context and module overhead", shown(v.context_overhead_bytes()),
      "NVML process - tracked");
  row(out, "  other processes", shown(v.other_processes_bytes()));
}

void write_phases_text(const TraceSummary& trace, std::ostream& out) {
  if (trace.phases.empty()) return;
  // A phase's growth adds up its calls: 20 forwards that each keep 650 MiB until backward show
  // 13 GiB on a device that never held it; the header says so.
  out << "  phases (NVTX ranges and gpumemtrace.h markers; growth: what its calls left live, "
         "summed):\n";
  out << "    " << std::left << std::setw(32) << "phase" << std::right << std::setw(8) << "device"
      << std::setw(8) << "calls" << std::setw(12) << "peak" << std::setw(12) << "growth"
      << "\n";
  for (const PhaseStats& p : trace.phases) {
    out << "    " << std::left << std::setw(32) << printable(p.name) << std::right << std::setw(8)
        << p.device << std::setw(8) << p.calls << std::setw(12) << human_bytes(p.peak_bytes)
        << std::setw(12) << signed_bytes(p.growth_bytes) << "\n";
  }
}

}  // namespace gmt::analyzer
