// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace export TRACE --format F -o FILE`: the trace in a format other tools open.
#include "analyzer/cli/command_support.h"
#include "analyzer/cli/commands.h"
#include "analyzer/cli/frames_option.h"
#include "analyzer/cli/output_file.h"
#include "analyzer/export/export_formats.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/model/timeline/timeline_builder.h"
#include "analyzer/report/report.h"

namespace gmt::analyzer {
namespace {

void write_format(const ExportOptions& options, TraceSummary& trace, std::ostream& out) {
  if (options.format == "folded") {
    write_folded(trace, options.what == "leaks" ? ProfileWhat::kLeaks : ProfileWhat::kPeak,
                 options.frames, out);
  } else if (options.format == "speedscope") {
    write_speedscope(trace, options.frames, out);
  } else if (options.format == "pprof") {
    write_pprof(trace, options.frames, out);
  } else if (options.format == "perfetto") {
    write_perfetto(trace, out);
  } else if (options.format == "memviz") {
    write_memviz(trace, options.frames, out);
  } else {
    throw std::invalid_argument("unknown export format: " + options.format);
  }
}

// jsonl: every trace and summary `paths` name, read as `report` reads them.
int export_jsonl(const ExportOptions& options, std::ostream& out, std::ostream& err) {
  const ReportInput input = load_traces(options.paths, options.jobs);
  for (const UnreadableTrace& u : input.unreadable) err << "gpumemtrace: " << u.error << "\n";
  for (const std::string& same : input.same_process) err << "gpumemtrace: " << same << "\n";
  for (const TraceSummary& t : input.traces) {
    for (const std::string& problem : t.problems)
      err << "gpumemtrace: " << t.path << ": left out at " << problem << "\n";
  }
  if (!input.unreadable.empty()) return 1;
  return write_output_file(options.output, out, err,
                           [&](std::ostream& file) { write_jsonl(input, file); });
}

}  // namespace

int export_command(const ExportOptions& options, std::ostream& out, std::ostream& err) {
  if (const int refused = refuse_output_over_input(options.output, options.paths, err)) {
    return refused;
  }
  if (options.format == "jsonl") return export_jsonl(options, out, err);
  SummaryOptions summary_options;
  // The counters' buckets: as fine as the bucket limit allows, whatever the trace's length.
  if (options.format == "perfetto") summary_options.timeline_resolution_ns = 1;
  TraceSummary trace;
  try {
    trace = load_trace(options.paths.front(), err, summary_options);
  } catch (const TraceError& e) {
    err << "gpumemtrace: " << e.what() << "\n";
    return 1;
  }
  return write_output_file(options.output, out, err,
                           [&](std::ostream& file) { write_format(options, trace, file); });
}

Command add_export_command(CLI::App& app) {
  auto options = std::make_shared<ExportOptions>();
  CLI::App* export_ = app.add_subcommand(
      "export",
      "Write a trace for other viewers: perfetto, pprof, folded, speedscope, memviz, jsonl");
  export_
      ->add_option("traces", options->paths,
                   "Trace file (jsonl: traces, summaries, or directories of them)")
      ->required();
  export_->add_option("--format", options->format, "Output format")
      ->required()
      ->check(CLI::IsMember({"perfetto", "pprof", "folded", "speedscope", "memviz", "jsonl"}));
  export_
      ->add_option("-j,--jobs", options->jobs,
                   "jsonl: traces read at once (default: $GPUMEMTRACE_JOBS, else one per CPU)")
      ->check(CLI::Range(1u, 4096u));
  export_->add_option("-o,--output", options->output, "Output file (\"-\": stdout)")->required();
  add_frames_option(*export_, options->frames);
  CLI::Option* what =
      export_
          ->add_option("--what", options->what,
                       "folded only: the peak or the leaks (speedscope holds both profiles)")
          ->check(CLI::IsMember({"peak", "leaks"}))
          ->capture_default_str();
  return {export_, [options, what] {
            // Only folded has a choice: the other formats would ignore it without a word.
            if (what->count() > 0 && options->format != "folded") {
              std::cerr << "gpumemtrace: --what applies to --format folded only, not "
                        << options->format << "\n";
              return 2;
            }
            // One trace for a viewer's file; only the rows of jsonl add up over several.
            if (options->paths.size() > 1 && options->format != "jsonl") {
              std::cerr << "gpumemtrace: --format " << options->format
                        << " takes one trace (jsonl takes several)\n";
              return 2;
            }
            return export_command(*options, std::cout, std::cerr);
          }};
}

}  // namespace gmt::analyzer
