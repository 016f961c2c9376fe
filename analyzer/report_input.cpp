#include "analyzer/peak_sites.h"
#include "analyzer/report.h"
#include "analyzer/trace_error.h"
#include "analyzer/trace_reader.h"

namespace gmt::analyzer {

namespace {
constexpr std::size_t kTopSites = 10;
}

ReportInput load_traces(const std::vector<std::string>& paths) {
  ReportInput input;
  for (const std::string& path : paths) {
    try {
      TraceSummary trace = summarize_trace(path);
      trace.symbolization_warnings = resolve_peak_sites(trace, kTopSites);
      input.traces.push_back(std::move(trace));
    } catch (const TraceError& e) {
      input.unreadable.push_back({path, e.what()});
    }
  }
  return input;
}

}  // namespace gmt::analyzer
