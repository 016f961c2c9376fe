// SPDX-License-Identifier: Apache-2.0
// The gpumemtrace command line: the commands (commands.h), parsed and run. Every usage error
// (an unknown command or option, a value that does not parse) exits 2; --help and --version
// exit 0.
#include <CLI/CLI.hpp>
#include <iostream>
#include <string_view>

#include "analyzer/cli/commands.h"

#ifndef GMT_VERSION
#define GMT_VERSION "unknown"
#endif

namespace {

constexpr int kUsageError = 2;

void list_commands(const CLI::App& app, std::ostream& out) {
  out << "commands:\n";
  for (const CLI::App* command : app.get_subcommands({})) {
    out << "  " << command->get_name();
    for (std::size_t n = command->get_name().size(); n < 10; ++n) out << ' ';
    out << command->get_description() << "\n";
  }
  out << "Run 'gpumemtrace COMMAND --help' for a command's options.\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "run") {
    return gmt::analyzer::run_command(argc - 2, argv + 2);
  }
  CLI::App app{"gpumemtrace: where did my GPU memory go?"};
  app.name("gpumemtrace");
  app.set_version_flag("--version", "gpumemtrace " GMT_VERSION);
  const std::vector<gmt::analyzer::Command> commands = gmt::analyzer::add_commands(app);
  if (argc < 2) {
    std::cerr << "gpumemtrace: a command is required\n";
    list_commands(app, std::cerr);
    return kUsageError;
  }
  if (const std::string_view first = argv[1]; !first.empty() && first[0] != '-') {
    bool known = false;
    for (const gmt::analyzer::Command& command : commands) {
      known = known || command.subcommand->get_name() == first;
    }
    if (!known) {
      std::cerr << "gpumemtrace: unknown command '" << first << "'\n";
      list_commands(app, std::cerr);
      return kUsageError;
    }
  }
  app.require_subcommand(1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::cerr << "gpumemtrace: " << e.what() << "\n";
    std::string command = "gpumemtrace";
    for (const CLI::App* sub : app.get_subcommands()) command += " " + sub->get_name();
    std::cerr << "Run '" << command << " --help' for the usage.\n";
    return kUsageError;
  }
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
