// SPDX-License-Identifier: Apache-2.0
#include <iomanip>
#include <sstream>

#include "analyzer/model/leak_classes.h"
#include "analyzer/report/byte_size.h"
#include "analyzer/report/frames/frame_text.h"
#include "analyzer/report/hidden_pool_note.h"
#include "analyzer/report/history_text.h"
#include "analyzer/report/inference_report.h"
#include "analyzer/report/job_view.h"
#include "analyzer/report/report.h"
#include "analyzer/report/roles_report.h"
#include "analyzer/report/trace_end_text.h"
#include "analyzer/report/views_report.h"

namespace gmt::analyzer {
namespace {

std::string command_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& arg : argv) {
    if (!line.empty()) line += ' ';
    line += printable(arg);
  }
  return line.empty() ? "(unknown command)" : line;
}

std::string ending(const TraceSummary& t) {
  switch (t.end) {
    case TraceEnd::kExited:
      return "complete: the process exited normally";
    case TraceEnd::kCut:
      if (died_of_signal(t))
        return "the process was ended by " + signal_text(*t.signal, t.pid) + " at " +
               human_duration(t.signal->time_ns) + "; every record up to then is here";
      return "the process did not exit normally (killed, crashed or _exit); every record up to "
             "then is here";
    case TraceEnd::kTruncated:
      return "truncated at byte " + std::to_string(t.end_offset) + ": " + t.end_reason +
             "; everything before it is reported";
    case TraceEnd::kCorrupt:
      return "damaged at byte " + std::to_string(t.end_offset) + ": " + t.end_reason +
             "; everything before it is reported";
    case TraceEnd::kStopped:
      return "recording stopped at " + std::to_string(t.stop_time_ns) + " ns: " + t.stop_reason +
             "; every record up to then is here (the program ran on)";
    case TraceEnd::kExec:
      return "the process replaced itself with exec (" + t.exec_program + ") at " +
             std::to_string(t.exec_time_ns) + " ns; every record up to then is here";
    case TraceEnd::kFailed:
      return "recording failed: " + t.end_reason;
    case TraceEnd::kRunning:
      return "still running (pid " + std::to_string(t.pid) +
             "): every record written so far is here; what is live is what it holds now";
  }
  return "";
}

// One line per kind, when there is more than plain device memory to tell apart.
void write_kinds(const std::map<format::MemoryKind, KindUsage>& kinds, const std::string& indent,
                 std::ostream& out) {
  if (kinds.empty() || (kinds.size() == 1 && kinds.begin()->first == format::MemoryKind::kDevice))
    return;
  out << indent << std::left << std::setw(18) << "by kind" << std::setw(12) << "peak"
      << "at exit\n";
  for (const auto& [kind, usage] : kinds) {
    out << indent << "  " << std::setw(16) << format::memory_kind_name(kind) << std::setw(12)
        << human_bytes(usage.peak_bytes) << human_bytes(usage.live_bytes) << "\n";
  }
  out << std::right;
}

// The largest allocation sites live at the peak, with the first frames of each stack.
void write_sites(const DeviceSummary& d, FrameMode frames, std::ostream& out) {
  if (d.top_sites.empty() || (d.top_sites.size() == 1 && d.top_sites[0].frames.empty())) return;
  constexpr std::size_t kFramesShown = 10;
  out << "    top sites at the peak\n";
  for (const ResolvedSite& site : d.top_sites) {
    if (site.cache) {
      out << "      " << human_bytes(site.bytes) << " free in the "
          << allocator_name(site.allocator)
          << (site.graph ? " allocator's CUDA graph pools (" : " cache (") << site.count
          << (site.count == 1 ? " segment" : " segments") << ")\n";
      continue;
    }
    out << "      " << human_bytes(site.bytes) << " in " << site.count
        << (site.allocator >= 0 ? (site.count == 1 ? " block" : " blocks")
                                : (site.count == 1 ? " allocation" : " allocations"));
    if (site.allocator >= 0) out << " of the " << allocator_name(site.allocator) << " allocator";
    out << "\n";
    write_frames(site.frames, kFramesShown, "        ", out, frames);
  }
}

// "views at the peak (sampled 2 ms after it)".
std::string views_title(const std::string& what, const std::optional<ViewValues>& v,
                        uint64_t peak_ns, uint64_t peak_bytes) {
  if (!v || what != "views at the peak") return what;
  const bool after = v->time_ns >= peak_ns;
  std::string title = what + " (sampled " +
                      human_duration(after ? v->time_ns - peak_ns : peak_ns - v->time_ns) +
                      (after ? " after it" : " before it");
  if (v->tracked_bytes != peak_bytes) {
    const bool below = v->tracked_bytes < peak_bytes;
    title += ", when " +
             human_bytes(below ? peak_bytes - v->tracked_bytes : v->tracked_bytes - peak_bytes) +
             (below ? " less" : " more") + " was tracked: the differences describe that moment";
  }
  return title + ")";
}

void write_device(const TraceSummary& t, const DeviceSummary& d, FrameMode frames,
                  std::ostream& out) {
  out << "  "
      << (d.device >= 0 ? "device " + std::to_string(d.device) : std::string("device unknown"));
  if (!d.identity.pci_bus_id.empty()) {
    out << "  (" << (d.identity.name.empty() ? "" : d.identity.name + ", ") << "PCI "
        << d.identity.pci_bus_id << ")";
  }
  out << "\n";
  out << "    peak          " << human_bytes(d.peak_bytes) << " (" << d.peak_bytes << " bytes) at "
      << human_duration(d.peak_time_ns);
  if (!d.peak_phase.empty()) out << " in " << d.peak_phase;
  out << "\n";
  if (const auto pool = hidden_pool(t, d))
    out << "    note          " << hidden_pool_note(*pool, d.device) << "\n";
  out << (t.end == TraceEnd::kRunning ? "    live now      " : "    live at exit  ")
      << human_bytes(d.live_bytes) << " in " << d.live_count
      << (d.live_count == 1 ? " allocation" : " allocations") << "\n";
  out << "    allocations   " << d.alloc_count << ", frees " << d.free_count << ", failed "
      << d.failed_alloc_count;
  if (d.failed_alloc_count > 0) out << " (gpumemtrace oom)";
  if (d.teardown_free_count > 0) out << ", freed by context teardown " << d.teardown_free_count;
  out << "\n";
  write_kinds(d.by_kind, "    ", out);
  if (d.roles_at_peak)
    write_roles_text(*d.roles_at_peak, t.roles_recorded, 5, " at the peak", "    ", out);
  if (d.roles_at_exit && d.roles_at_exit->total_bytes() > 0) {
    const RoleBreakdown& exit = *d.roles_at_exit;
    write_roles_text(exit, true, 0,
                     exit.at_program_end
                         ? " at exit (the program's end, " + human_duration(exit.time_ns) + ")"
                         : std::string(" at exit"),
                     "    ", out);
  }
  if (const auto inference = device_inference(d)) {
    const bool at_exit = d.roles_at_exit && d.roles_at_exit->kv_cache;
    write_inference_text(*inference, at_exit ? " at exit" : " at the peak", "    ", out);
  }
  write_sites(d, frames, out);
  const char* absent = t.from_summary ? kViewsNotInSummary : kNoViewSample;
  write_views_text(views_title("views at the peak", d.views_at_peak, d.peak_time_ns, d.peak_bytes),
                   d.views_at_peak, d.peak_bytes, by_library_at_peak(t, d), out, absent);
  write_views_text(views_title("views at exit", d.views_at_exit, d.peak_time_ns, d.peak_bytes),
                   d.views_at_exit, d.live_bytes, by_library_at_exit(t, d), out, absent);
}

// The never-freed bytes by class, pointing to `leaks` for the sites.
void write_leak_line(const TraceSummary& t, std::ostream& out) {
  std::map<LeakClass, uint64_t> by_class;
  for (const LeakGroup& g : t.leaks) by_class[g.leak_class] += g.bytes;
  if (by_class.empty()) return;
  // A process that still runs may yet free what it holds.
  out << (t.end == TraceEnd::kRunning ? "  not freed yet" : "  never freed  ");
  for (const auto& [c, bytes] : by_class)
    out << " " << leak_class_name(c) << " " << human_bytes(bytes);
  out << "  (gpumemtrace leaks)\n";
}

// One row per process and device, the run's totals, and the highest peak pointed out: for a run
// of several processes or ranks.
void write_run_table(const std::vector<TraceSummary>& traces, std::ostream& out) {
  const DeviceSummary* highest = nullptr;
  for (const TraceSummary& t : traces) {
    for (const auto& [ordinal, d] : t.devices) {
      if (highest == nullptr || d.peak_bytes > highest->peak_bytes) highest = &d;
    }
  }
  const std::size_t processes = process_count(traces);
  out << "run of " << processes << (processes == 1 ? " process" : " processes");
  if (processes != traces.size())
    out << " (" << traces.size() << " traces: " << traces.size() - processes
        << (traces.size() - processes == 1 ? " image" : " images")
        << " a process exec'd after another)";
  out << "\n";
  out << std::left << "  " << std::setw(9) << "pid" << std::setw(6) << "rank" << std::setw(8)
      << "device" << std::setw(12) << "peak" << std::setw(12) << "leaks"
      << "OOMs\n";
  uint64_t peaks = 0, leaks = 0, ooms = 0;
  for (const TraceSummary& t : traces) {
    for (const auto& [ordinal, d] : t.devices) {
      // Host memory names no device: an entry with nothing resident is no row of its own.
      if (ordinal < 0 && d.peak_bytes == 0) continue;
      const uint64_t leaked = leaked_on(t, ordinal);
      out << "  " << std::setw(9) << t.pid << std::setw(6)
          << (t.rank ? std::to_string(*t.rank) : std::string("-")) << std::setw(8)
          << (ordinal >= 0 ? std::to_string(ordinal) : std::string("?")) << std::setw(12)
          << human_bytes(d.peak_bytes) << std::setw(12) << human_bytes(leaked)
          << d.failed_alloc_count << (&d == highest ? "   <- highest peak" : "")
          << (t.exec_image > 0 ? "   (after exec)" : "") << "\n";
      peaks += d.peak_bytes;
      leaks += leaked;
      ooms += d.failed_alloc_count;
    }
  }
  out << "  " << std::setw(23) << "total (sum of peaks)" << std::setw(12) << human_bytes(peaks)
      << std::setw(12) << human_bytes(leaks) << ooms << "\n"
      << std::right;
}

}  // namespace

void write_report_text(const ReportInput& input, FrameMode frames, std::ostream& out) {
  for (const TraceSummary& t : input.traces) {
    out << "trace " << t.path << "\n";
    out << "  process       pid " << t.pid << " (parent " << t.ppid << ") on " << printable(t.host)
        << ": " << command_line(t.argv) << "\n";
    // A PyTorch program's events are mostly its allocator's: a few driver events alone would
    // read as if little was recorded.
    out << "  events        " << t.events;
    if (const uint64_t blocks = t.block_events(); blocks > 0)
      out << " driver and " << blocks << " caching-allocator block events";
    out << " over " << human_duration(t.duration_ns) << " (" << ending(t) << ")\n";
    if (const std::string history = history_text(t); !history.empty())
      out << "  history       " << history << "\n";
    if (t.end != TraceEnd::kExited && !t.open_at_end.empty())
      out << "  open at end   " << open_at_end_text(t) << "\n";
    if (t.unmatched_frees > 0) {
      out << "  note          " << t.unmatched_frees
          << " frees of addresses allocated before tracing started or by an API not tracked\n";
    }
    if (t.devices.empty()) out << "  no device memory was allocated\n";
    for (const std::string& note : t.notes) {
      out << "  recording     " << printable(note) << "\n";
    }
    for (const auto& [ordinal, d] : t.devices) write_device(t, d, frames, out);
    write_phases_text(t, out);
    write_leak_line(t, out);
    if (!t.process_kinds.empty()) {
      out << "  not on a device\n";
      write_kinds(t.process_kinds, "    ", out);
    }
    out << "\n";
  }
  if (input.traces.size() > 1) {
    write_run_table(input.traces, out);
    write_job_text(input, out);
  }
  for (const auto& u : input.unreadable) out << "unreadable: " << u.error << "\n";
}

}  // namespace gmt::analyzer
