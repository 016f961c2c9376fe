#include "analyzer/report.h"
#include "analyzer/trace_error.h"
#include "analyzer/trace_reader.h"

namespace gmt::analyzer {

ReportInput load_traces(const std::vector<std::string>& paths) {
  ReportInput input;
  for (const std::string& path : paths) {
    try {
      input.traces.push_back(summarize_trace(path));
    } catch (const TraceError& e) {
      input.unreadable.push_back({path, e.what()});
    }
  }
  return input;
}

}  // namespace gmt::analyzer
