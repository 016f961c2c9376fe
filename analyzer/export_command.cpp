// `gpumemtrace export TRACE --format F -o FILE`: the trace in a format other tools open.
#include <cerrno>
#include <cstring>
#include <fstream>

#include "analyzer/command_support.h"
#include "analyzer/commands.h"
#include "analyzer/export_formats.h"
#include "analyzer/timeline_builder.h"
#include "analyzer/trace_error.h"

namespace gmt::analyzer {
namespace {

void write_format(const ExportOptions& options, TraceSummary& trace, std::ostream& out) {
  if (options.format == "folded") {
    write_folded(trace, options.what == "leaks" ? ProfileWhat::kLeaks : ProfileWhat::kPeak, out);
  } else if (options.format == "speedscope") {
    write_speedscope(trace, out);
  } else if (options.format == "pprof") {
    write_pprof(trace, out);
  } else if (options.format == "perfetto") {
    write_perfetto(trace, out);
  } else if (options.format == "memviz") {
    write_memviz(trace, out);
  } else {
    throw std::invalid_argument("unknown export format: " + options.format);
  }
}

}  // namespace

int export_command(const ExportOptions& options, std::ostream& out, std::ostream& err) {
  SummaryOptions summary_options;
  // The counters' buckets: as fine as the bucket limit allows, whatever the trace's length.
  if (options.format == "perfetto") summary_options.timeline_resolution_ns = 1;
  TraceSummary trace;
  try {
    trace = load_trace(options.path, err, summary_options);
  } catch (const TraceError& e) {
    err << "gpumemtrace: " << e.what() << "\n";
    return 1;
  }
  if (options.output == "-") {
    write_format(options, trace, out);
    out.flush();
    return out ? 0 : 1;
  }
  std::ofstream file(options.output, std::ios::binary | std::ios::trunc);
  if (!file) {
    err << "gpumemtrace: cannot create " << options.output << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  write_format(options, trace, file);
  file.close();
  if (!file) {
    err << "gpumemtrace: cannot write " << options.output << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  return 0;
}

}  // namespace gmt::analyzer
