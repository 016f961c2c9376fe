// SPDX-License-Identifier: Apache-2.0
// The list of the CLI's commands (commands.h).
#include "analyzer/cli/commands.h"

#include "analyzer/cli/frames_option.h"

namespace gmt::analyzer {

Command add_trace_json_command(CLI::App& app, const char* name, const char* description,
                               TraceJsonRun run, bool stacks) {
  struct Options {
    std::string path;
    bool json = false;
    FrameMode frames = FrameMode::kUser;
  };
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand(name, description);
  command->add_option("trace", options->path, "Trace file")->required();
  command->add_flag("--json", options->json,
                    "Machine-readable output (contract in docs/commands.md)");
  if (stacks) add_frames_option(*command, options->frames);
  return {command, [options, run] {
            return run(options->path, options->json, options->frames, std::cout, std::cerr);
          }};
}

std::vector<Command> add_commands(CLI::App& app) {
  return {add_run_command(app),  add_report_command(app),    add_dump_command(app),
          add_peak_command(app), add_leaks_command(app),     add_oom_command(app),
          add_info_command(app), add_check_command(app),     add_timeline_command(app),
          add_diff_command(app), add_export_command(app),    add_html_command(app),
          add_top_command(app),  add_summarize_command(app), add_whatif_command(app)};
}

}  // namespace gmt::analyzer
