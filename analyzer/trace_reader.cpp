#include "analyzer/trace_reader.h"

#include "analyzer/mapped_file.h"
#include "analyzer/replay.h"
#include "analyzer/trace_error.h"
#include "format/file_header.h"
#include "format/record_decoder.h"

namespace gmt::analyzer {

TraceSummary summarize_trace(const std::string& path) {
  MappedFile file(path);
  const format::HeaderCheck header = format::check_header(file.bytes());
  if (!header.ok) throw TraceError(path + ": " + header.error);

  Replay replay;
  format::RecordDecoder decoder(file.bytes());
  bool first = true;
  while (auto record = decoder.next()) {
    if (first && !std::holds_alternative<format::ProcessInfoRecord>(*record)) {
      throw TraceError(path + ": the first record is not the process description");
    }
    first = false;
    replay.apply(*record);
  }

  TraceSummary& summary = replay.summary();
  summary.path = path;
  const format::StreamStatus& status = decoder.status();
  if (status.end == format::StreamEnd::kTruncated || status.end == format::StreamEnd::kCorrupt) {
    summary.end =
        status.end == format::StreamEnd::kTruncated ? TraceEnd::kTruncated : TraceEnd::kCorrupt;
    summary.end_offset = status.offset;
    summary.end_reason = status.reason;
  }
  if (first) {
    throw TraceError(path + ": no process description after the header" +
                     (status.reason.empty() ? "" : " (" + status.reason + ")"));
  }
  return summary;
}

}  // namespace gmt::analyzer
