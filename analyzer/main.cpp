// The gpumemtrace command line.
#include <CLI/CLI.hpp>
#include <iostream>
#include <string_view>

#include "analyzer/dump_command.h"
#include "analyzer/report.h"
#include "analyzer/run_command.h"

namespace {

int report_command(const std::vector<std::string>& paths, bool json) {
  const gmt::analyzer::ReportInput input = gmt::analyzer::load_traces(paths);
  if (json) {
    gmt::analyzer::write_report_json(input, std::cout);
  } else {
    gmt::analyzer::write_report_text(input, std::cout);
  }
  for (const auto& u : input.unreadable) std::cerr << "gpumemtrace: " << u.error << "\n";
  for (const auto& t : input.traces) {
    for (const std::string& problem : t.problems) {
      std::cerr << "gpumemtrace: " << t.path << ": left out at " << problem << "\n";
    }
  }
  return input.unreadable.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gpumemtrace: where did my GPU memory go?"};
  app.require_subcommand(1);

  // `run` parses its own arguments (see parse_run_arguments): everything from the program's
  // name on belongs to the program, "--" and options included, which CLI11 cannot express.
  // It is registered here for --help only.
  if (argc >= 2 && std::string_view(argv[1]) == "run") {
    try {
      return gmt::analyzer::run_traced(gmt::analyzer::parse_run_arguments(argc - 2, argv + 2));
    } catch (const std::exception& e) {
      std::cerr << "gpumemtrace run: " << e.what() << "\n";
      return 2;
    }
  }
  app.add_subcommand(
      "run", "Run a program under the profiler: gpumemtrace run [-o PATTERN] [--] CMD ARGS...");

  std::vector<std::string> report_paths;
  bool report_json = false;
  CLI::App* report = app.add_subcommand("report", "Summarize one or more traces");
  report->add_option("traces", report_paths, "Trace files")->required();
  report->add_flag("--json", report_json, "Machine-readable output (contract in README.md)");

  std::string dump_path;
  CLI::App* dump =
      app.add_subcommand("dump", "Print every record of a trace as one JSON object per line");
  dump->add_option("trace", dump_path, "Trace file")->required();

  CLI11_PARSE(app, argc, argv);

  try {
    if (report->parsed()) return report_command(report_paths, report_json);
    if (dump->parsed()) return gmt::analyzer::dump_trace(dump_path, std::cout, std::cerr);
  } catch (const std::exception& e) {
    std::cerr << "gpumemtrace: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
