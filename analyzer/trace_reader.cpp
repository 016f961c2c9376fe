#include "analyzer/trace_reader.h"

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
