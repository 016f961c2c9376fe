// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace run [-o PATTERN] [--stacks MODE] [--] CMD ARGS...`: the launcher (run/launcher.h)
// behind the command line.
#include "analyzer/cli/commands.h"
#include "analyzer/run/launcher.h"

namespace gmt::analyzer {

int run_command(int argc, const char* const* argv) {
  try {
    const RunOptions options = parse_run_arguments(argc, argv);
    if (options.help) {
      std::cout << run_usage();
      return 0;
    }
    return run_traced(options);
  } catch (const std::exception& e) {
    std::cerr << "gpumemtrace run: " << e.what() << "\n";
    return 2;
  }
}

// Registered for --help only: main() hands `run` its arguments before CLI11 sees them.
Command add_run_command(CLI::App& app) {
  CLI::App* run = app.add_subcommand(
      "run", "Run a program under the profiler: gpumemtrace run [-o PATTERN] [--] CMD ARGS...");
  return {run, [] { return 0; }};
}

}  // namespace gmt::analyzer
