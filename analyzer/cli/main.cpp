// SPDX-License-Identifier: Apache-2.0
// The gpumemtrace command line: the commands (commands.h), parsed and run.
#include <CLI/CLI.hpp>
#include <iostream>
#include <string_view>

#include "analyzer/cli/commands.h"

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "run") {
    return gmt::analyzer::run_command(argc - 2, argv + 2);
  }
  CLI::App app{"gpumemtrace: where did my GPU memory go?"};
  app.require_subcommand(1);
  const std::vector<gmt::analyzer::Command> commands = gmt::analyzer::add_commands(app);
  CLI11_PARSE(app, argc, argv);
  try {
    for (const gmt::analyzer::Command& command : commands) {
      if (command.subcommand->parsed()) return command.run();
    }
  } catch (const std::exception& e) {
    std::cerr << "gpumemtrace: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
