// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace summarize TRACE -o SUMMARY`: what the job view needs from one trace, as a small
// JSON file (trace_summary_json.h) that `report`, `check` and `export --format jsonl` read in
// place of the trace.
#include <iostream>

#include "analyzer/cli/command_support.h"
#include "analyzer/cli/commands.h"
#include "analyzer/cli/output_file.h"
#include "analyzer/report/json/trace_summary_json.h"
#include "analyzer/report/report.h"

namespace gmt::analyzer {
namespace {

int summarize_command(const std::string& path, const std::string& output, std::ostream& err) {
  if (const int refused = refuse_output_over_input(output, {path}, err)) return refused;
  const ReportInput input = load_traces({path}, 1);
  for (const UnreadableTrace& u : input.unreadable) err << "gpumemtrace: " << u.error << "\n";
  if (input.traces.size() != 1) {
    if (input.unreadable.empty())
      err << "gpumemtrace: " << path << " holds " << input.traces.size()
          << " traces; summarize takes one trace\n";
    return 1;
  }
  const TraceSummary& trace = input.traces[0];
  for (const std::string& problem : trace.problems)
    err << "gpumemtrace: " << trace.path << ": left out at " << problem << "\n";
  const std::string text = trace_summary_json(trace, input.frames[0]).dump() + "\n";
  return write_output_file(output, std::cout, err, [&](std::ostream& file) { file << text; });
}

}  // namespace

Command add_summarize_command(CLI::App& app) {
  struct Options {
    std::string path;
    std::string output;
  };
  auto options = std::make_shared<Options>();
  CLI::App* summarize = app.add_subcommand(
      "summarize", "Write what the job view needs from one trace as a small JSON summary");
  summarize->add_option("trace", options->path, "Trace file")->required();
  summarize->add_option("-o,--output", options->output, "The summary to write (\"-\": stdout)")
      ->required();
  return {summarize,
          [options] { return summarize_command(options->path, options->output, std::cerr); }};
}

}  // namespace gmt::analyzer
