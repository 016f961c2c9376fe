// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace html TRACE... -o report.html`: the traces' summaries as one self-contained page.
#include <iostream>

#include "analyzer/cli/command_support.h"
#include "analyzer/cli/commands.h"
#include "analyzer/cli/frames_option.h"
#include "analyzer/cli/output_file.h"
#include "analyzer/html/html_page.h"
#include "analyzer/html/page_data.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/report/report.h"

namespace gmt::analyzer {

int html_command(const std::vector<std::string>& paths, const std::string& output,
                 std::ostream& err, unsigned jobs, FrameMode frames) {
  if (const int refused = refuse_output_over_input(output, paths, err)) return refused;
  ReportInput input = load_traces(paths, jobs);
  for (const UnreadableTrace& u : input.unreadable) err << "gpumemtrace: " << u.error << "\n";
  for (const std::string& same : input.same_process) err << "gpumemtrace: " << same << "\n";
  for (const TraceSummary& t : input.traces) {
    for (const std::string& problem : t.problems)
      err << "gpumemtrace: " << t.path << ": left out at " << problem << "\n";
  }
  if (input.traces.empty()) return 1;  // every path was named above: no page of nothing
  // The page's timelines and flame graphs come from a trace's records, which a summary has not.
  // Said once, however many summaries were given (a job's directory holds one per rank).
  std::vector<std::string> summaries;
  for (const std::string& file : input.summary_files) {
    if (!file.empty()) summaries.push_back(file);
  }
  if (summaries.size() == 1) {
    err << "gpumemtrace: " << summaries[0]
        << " is a summary: html needs the trace itself (report reads summaries)\n";
  } else if (summaries.size() > 1) {
    err << "gpumemtrace: " << summaries.size() << " of the " << input.traces.size()
        << " inputs are summaries (" << summaries.front() << " ... " << summaries.back()
        << "): html needs the traces themselves (report reads summaries)\n";
  }
  if (!summaries.empty()) return 1;
  nlohmann::ordered_json data;
  try {
    HtmlLimits limits;
    limits.frame_mode = frames;
    data = html_report_data(input, limits, jobs);
  } catch (const TraceError& e) {
    err << "gpumemtrace: " << e.what() << "\n";
    return 1;
  }
  if (write_output_file(output, std::cout, err,
                        [&](std::ostream& file) { write_html_page(data, file); }) != 0) {
    return 1;
  }
  return input.unreadable.empty() ? 0 : 1;
}

Command add_html_command(CLI::App& app) {
  struct Options {
    std::vector<std::string> paths;
    std::string output;
    unsigned jobs = 0;
    FrameMode frames = FrameMode::kUser;
  };
  auto options = std::make_shared<Options>();
  CLI::App* html = app.add_subcommand(
      "html",
      "One self-contained HTML page: timelines, every allocation, segments, steps, flame graph of "
      "the peak, leaks");
  html->add_option("traces", options->paths, kTracesHelp)->required();
  html->add_option("-o,--output", options->output, "The page to write")->required();
  html->add_option("-j,--jobs", options->jobs,
                   "Traces read at once (default: $GPUMEMTRACE_JOBS, else one per CPU)")
      ->check(CLI::Range(1u, 4096u));
  add_frames_option(*html, options->frames);
  return {html, [options] {
            return html_command(options->paths, options->output, std::cerr, options->jobs,
                                options->frames);
          }};
}

}  // namespace gmt::analyzer
