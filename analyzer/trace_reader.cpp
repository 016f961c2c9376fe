#include "analyzer/trace_reader.h"

#include <map>

#include "analyzer/mapped_file.h"
#include "analyzer/replay.h"
#include "analyzer/trace_error.h"
#include "format/file_header.h"
#include "format/trace_reader.h"

namespace gmt::analyzer {

TraceSummary summarize_trace(const std::string& path) {
  MappedFile file(path);
  const format::HeaderCheck header = format::check_header(file.bytes());
  if (!header.ok) throw TraceError(path + ": " + header.error);

  Replay replay;
  format::TraceReader reader(file.bytes(), header.header);
  bool described = false;
  while (auto record = reader.next()) {
    described = described || std::holds_alternative<format::ProcessInfoRecord>(*record);
    replay.apply(*record);
  }
  // What was live at each peak needs the peak's position, known only now: a second pass stops
  // there. (Snapshotting at every new high-water mark instead would cost O(live) per record
  // while memory grows.)
  if (described && !replay.summary().devices.empty()) {
    std::map<int, uint64_t> peaks;
    for (const auto& [ordinal, d] : replay.summary().devices) {
      if (d.peak_bytes > 0) peaks[ordinal] = d.peak_record;
    }
    Replay second;
    second.snapshot_peaks_at(std::move(peaks));
    format::TraceReader again(file.bytes(), header.header);
    while (auto record = again.next()) second.apply(*record);
    for (auto& [ordinal, d] : replay.summary().devices) {
      d.peak_sites = std::move(second.summary().devices[ordinal].peak_sites);
    }
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
