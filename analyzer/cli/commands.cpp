// SPDX-License-Identifier: Apache-2.0
// The list of the CLI's commands (commands.h).
#include "analyzer/cli/commands.h"

namespace gmt::analyzer {

std::vector<Command> add_commands(CLI::App& app) {
  return {add_run_command(app),  add_report_command(app), add_dump_command(app),
          add_peak_command(app), add_leaks_command(app),  add_oom_command(app),
          add_info_command(app), add_check_command(app),  add_timeline_command(app),
          add_diff_command(app), add_export_command(app), add_html_command(app),
          add_top_command(app)};
}

}  // namespace gmt::analyzer
