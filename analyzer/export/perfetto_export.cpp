// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace export --format perfetto`: Chrome's trace-event JSON, which ui.perfetto.dev and
// chrome://tracing open. Counter tracks ("C") of each device's live bytes, device-resident in all,
// per kind and per role (where the framework recorded roles), and of each view the sampler
// recorded; phases as complete slices ("X") on their
// threads; each device's peak and each failed allocation as instants ("i").
//
// Bounded whatever the trace's length: counters come from the timeline's buckets (at most
// kMaxTimelineBuckets per series, each the most that was live during it, so the peak is never
// smoothed away) and are written only where they change; phases past ExportPass::kPhaseRunsKept
// and failures past TraceSummary::kFailuresKept are left out.
#include <nlohmann/json.hpp>

#include "analyzer/export/export_formats.h"
#include "analyzer/export/export_record_pass.h"
#include "analyzer/export/export_stacks.h"
#include "analyzer/model/timeline/library_timeline.h"
#include "analyzer/model/timeline/timeline_builder.h"
#include "analyzer/report/cuda_error_name.h"

namespace gmt::analyzer {
namespace {

using nlohmann::ordered_json;

// Events are written as they are made: the file is never held whole in memory.
class EventWriter {
 public:
  explicit EventWriter(std::ostream& out) : out_(out) { out_ << "{\"traceEvents\":[\n"; }
  void add(const ordered_json& event) {
    out_ << (first_ ? "" : ",\n") << event.dump();
    first_ = false;
  }
  void finish(const ordered_json& other) {
    out_ << "\n],\"displayTimeUnit\":\"ms\",\"otherData\":" << other.dump() << "}\n";
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

// Trace-event times are microseconds; fractions keep the nanoseconds.
double micros(uint64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

// One counter track from buckets: a point where the value changes, and one at the end.
void counter(EventWriter& events, uint64_t pid, const std::string& name,
             const std::vector<uint64_t>& buckets, uint64_t resolution_ns, uint64_t end_ns) {
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    if (b > 0 && buckets[b] == buckets[b - 1]) continue;
    events.add({{"name", name},
                {"ph", "C"},
                {"ts", micros(b * resolution_ns)},
                {"pid", pid},
                {"args", {{"bytes", buckets[b]}}}});
  }
  if (!buckets.empty() && end_ns > (buckets.size() - 1) * resolution_ns) {
    events.add({{"name", name},
                {"ph", "C"},
                {"ts", micros(end_ns)},
                {"pid", pid},
                {"args", {{"bytes", buckets.back()}}}});
  }
}

// The peak's figures, with the framework's at that same moment (the model's views at the peak).
ordered_json peak_args(const DeviceSummary& d) {
  ordered_json args = {{"device", d.device}, {"bytes", d.peak_bytes}, {"phase", d.peak_phase}};
  if (d.views_at_peak && d.views_at_peak->framework_allocated_bytes) {
    args["framework_allocated_bytes"] = *d.views_at_peak->framework_allocated_bytes;
    args["framework_reserved_bytes"] = d.views_at_peak->framework_reserved_bytes.value_or(0);
  }
  return args;
}

}  // namespace

void write_perfetto(TraceSummary& trace, std::ostream& out) {
  const uint64_t resolution = trace.timeline.resolution_ns > 0
                                  ? trace.timeline.resolution_ns
                                  : timeline_resolution(1, trace.duration_ns);
  const ExportPass pass = read_export_pass(trace, resolution);
  const uint64_t pid = trace.pid;
  EventWriter events(out);

  std::string process = trace.argv.empty() ? "process" : trace.argv.front();
  process = process.substr(process.find_last_of('/') + 1) + " (pid " + std::to_string(pid) + ")";
  events.add({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", process}}}});
  for (const auto& [tid, name] : trace.threads) {
    events.add({{"name", "thread_name"},
                {"ph", "M"},
                {"pid", pid},
                {"tid", tid},
                {"args", {{"name", name}}}});
  }

  for (const auto& [ordinal, d] : trace.timeline.devices) {
    const std::string device = device_root(ordinal);
    counter(events, pid, device + " resident", d.resident, resolution, trace.duration_ns);
    for (const auto& [kind, series] : d.by_kind) {
      counter(events, pid, device + " " + std::string(format::memory_kind_name(kind)), series,
              resolution, trace.duration_ns);
    }
  }
  // Where the framework recorded roles, a track per role: the bytes of each bucket at the moment
  // its most was live, adding up to the resident track (library_timeline.h).
  if (trace.roles_recorded) {
    const LibraryTimeline split = read_library_timeline(trace, resolution, 0);
    for (const auto& [ordinal, d] : split.devices) {
      for (const auto& [role, series] : d.roles) {
        counter(events, pid, device_root(ordinal) + " role " + role_name(role), series, resolution,
                trace.duration_ns);
      }
    }
  }
  for (const auto& [ordinal, views] : pass.views) {
    for (const auto& [view, points] : views) {
      const std::string name = device_root(ordinal) + " view " + view;
      for (const auto& [bucket, value] : points) {
        events.add({{"name", name},
                    {"ph", "C"},
                    {"ts", micros(bucket * resolution)},
                    {"pid", pid},
                    {"args", {{"bytes", value}}}});
      }
    }
  }

  for (const PhaseRun& p : pass.phases) {
    events.add({{"name", p.name},
                {"cat", "phase"},
                {"ph", "X"},
                {"ts", micros(p.start_ns)},
                {"dur", micros(p.end_ns - p.start_ns)},
                {"pid", pid},
                {"tid", p.thread},
                {"args", {{"ended", p.ended}}}});
  }

  for (const auto& [ordinal, d] : trace.devices) {
    if (d.peak_bytes == 0) continue;
    events.add({{"name", "peak " + device_root(ordinal)},
                {"cat", "peak"},
                {"ph", "i"},
                {"s", "p"},
                {"ts", micros(d.peak_time_ns)},
                {"pid", pid},
                {"args", peak_args(d)}});
  }
  for (const FailedAllocation& f : trace.failures) {
    events.add({{"name", "OOM " + device_root(f.device)},
                {"cat", "oom"},
                {"ph", "i"},
                {"s", "p"},
                {"ts", micros(f.time_ns)},
                {"pid", pid},
                {"args",
                 {{"device", f.device},
                  {"api", std::string(format::api_name(f.api))},
                  {"kind", std::string(format::memory_kind_name(f.kind))},
                  {"requested_bytes", f.requested_bytes},
                  {"live_bytes", f.live_bytes},
                  {"error", f.error},
                  {"error_name", cuda_error_name(f.error)}}}});
  }
  events.finish({{"trace", trace.path},
                 {"resolution_ns", resolution},
                 {"phases_left_out", pass.phases_not_kept},
                 {"failures_left_out", trace.failures_not_kept}});
}

}  // namespace gmt::analyzer
