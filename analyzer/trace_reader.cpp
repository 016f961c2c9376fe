#include "analyzer/trace_reader.h"

#include <map>

#include "analyzer/leak_classes.h"
#include "analyzer/mapped_file.h"
#include "analyzer/replay.h"
#include "analyzer/timeline_builder.h"
#include "analyzer/trace_error.h"
#include "format/file_header.h"
#include "format/trace_reader.h"

namespace gmt::analyzer {

TraceSummary summarize_trace(const std::string& path, const SummaryOptions& options) {
  MappedFile file(path);
  return summarize_trace_bytes(file.bytes(), path, options);
}

TraceSummary summarize_trace_bytes(std::span<const uint8_t> bytes, const std::string& path,
                                   const SummaryOptions& options) {
  const format::HeaderCheck header = format::check_header(bytes);
  if (!header.ok) throw TraceError(path + ": " + header.error);

  Replay replay;
  format::TraceReader reader(bytes, header.header);
  bool described = false;
  while (auto record = reader.next()) {
    described = described || std::holds_alternative<format::ProcessInfoRecord>(*record);
    replay.apply(*record);
  }
  // What was live at each peak needs the peak's position, known only now: a second pass stops
  // there. (Snapshotting at every new high-water mark instead would cost O(live) per record
  // while memory grows.)
  replay.finish();
  if (described) {
    std::map<int, uint64_t> peaks;
    for (const auto& [ordinal, d] : replay.summary().devices) {
      if (d.peak_bytes > 0) peaks[ordinal] = d.peak_record;
    }
    const uint64_t duration = replay.summary().duration_ns;
    Replay second;
    second.snapshot_peaks_at(std::move(peaks));
    uint64_t records = 0;
    for (uint64_t n : replay.summary().record_counts) records += n;
    second.sample_sites_after(leak_sample_positions(records));
    if (options.timeline_resolution_ns > 0)
      second.record_timeline(timeline_resolution(options.timeline_resolution_ns, duration));
    format::TraceReader again(bytes, header.header);
    while (auto record = again.next()) second.apply(*record);
    second.finish();
    TraceSummary& first = replay.summary();
    for (auto& [ordinal, d] : first.devices) {
      DeviceSummary& again = second.summary().devices[ordinal];
      d.peak_sites = std::move(again.peak_sites);
      d.views_at_peak = again.views_at_peak;  // the peak's position is known in this pass only
    }
    first.sample_times = second.summary().sample_times;
    for (auto& [key, site] : first.sites) {
      site.live_samples = std::move(second.summary().sites[key].live_samples);
    }
    first.timeline = std::move(second.summary().timeline);
    classify_leaks(first);
  }

  TraceSummary& summary = replay.summary();
  summary.path = path;
  // The first thing left out is what the report names; all of them go to `problems`.
  for (const format::ReadProblem& problem : reader.problems()) {
    if (!summary.truncated()) {
      summary.end = problem.kind == format::ReadProblem::Kind::kTruncated ? TraceEnd::kTruncated
                                                                          : TraceEnd::kCorrupt;
      summary.end_offset = problem.offset;
      summary.end_reason = problem.reason;
    }
    summary.problems.push_back("byte " + std::to_string(problem.offset) + ": " + problem.reason);
  }
  if (!described) {
    throw TraceError(path + ": no process description in the trace" +
                     (summary.end_reason.empty() ? "" : " (" + summary.end_reason + ")"));
  }
  return summary;
}

}  // namespace gmt::analyzer
