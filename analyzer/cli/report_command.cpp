// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace report TRACE...`: one section per trace, in text or in JSON.
#include "analyzer/cli/command_support.h"
#include "analyzer/cli/commands.h"
#include "analyzer/cli/frames_option.h"
#include "analyzer/report/report.h"

namespace gmt::analyzer {
namespace {

int report_command(const std::vector<std::string>& paths, bool json, FrameMode frames,
                   unsigned jobs) {
  const ReportInput input = load_traces(paths, jobs);
  if (json) {
    write_report_json(input, std::cout);
  } else {
    write_report_text(input, frames, std::cout);
  }
  for (const auto& u : input.unreadable) std::cerr << "gpumemtrace: " << u.error << "\n";
  for (const std::string& same : input.same_process) std::cerr << "gpumemtrace: " << same << "\n";
  for (const auto& t : input.traces) {
    for (const std::string& problem : t.problems) {
      std::cerr << "gpumemtrace: " << t.path << ": left out at " << problem << "\n";
    }
  }
  return input.unreadable.empty() ? 0 : 1;
}

}  // namespace

Command add_report_command(CLI::App& app) {
  struct Options {
    std::vector<std::string> paths;
    bool json = false;
    FrameMode frames = FrameMode::kUser;
    unsigned jobs = 0;
  };
  auto options = std::make_shared<Options>();
  CLI::App* report = app.add_subcommand("report", "Summarize one or more traces");
  report->add_option("traces", options->paths, kTracesHelp)->required();
  report->add_flag("--json", options->json,
                   "Machine-readable output (contract in docs/commands.md)");
  report
      ->add_option("-j,--jobs", options->jobs,
                   "Traces read at once (default: $GPUMEMTRACE_JOBS, else one per CPU)")
      ->check(CLI::Range(1u, 4096u));
  add_frames_option(*report, options->frames);
  return {report, [options] {
            return report_command(options->paths, options->json, options->frames, options->jobs);
          }};
}

}  // namespace gmt::analyzer
