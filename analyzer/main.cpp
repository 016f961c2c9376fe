// The gpumemtrace command line.
#include <CLI/CLI.hpp>
#include <iostream>
#include <string_view>

#include "analyzer/commands.h"
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

  gmt::analyzer::PeakOptions peak_options;
  CLI::App* peak = app.add_subcommand("peak", "Everything live at each device's high-water mark");
  peak->add_option("trace", peak_options.path, "Trace file")->required();
  peak->add_option("--device", peak_options.device, "Only this device");
  peak->add_option("--top", peak_options.top, "Groups shown; the rest make one \"other\" row")
      ->check(CLI::PositiveNumber);
  peak->add_option("--by", peak_options.by, "Group by call stack or by owning library")
      ->check(CLI::IsMember({"stack", "library"}));
  peak->add_flag("--json", peak_options.json, "Machine-readable output (contract in README.md)");

  std::string single_path;
  bool single_json = false;
  CLI::App* leaks = app.add_subcommand("leaks", "Allocations never freed, grouped and classified");
  CLI::App* oom = app.add_subcommand("oom", "Every failed allocation and what was held then");
  for (CLI::App* command : {leaks, oom}) {
    command->add_option("trace", single_path, "Trace file")->required();
    command->add_flag("--json", single_json, "Machine-readable output (contract in README.md)");
  }

  CLI11_PARSE(app, argc, argv);

  try {
    if (report->parsed()) return report_command(report_paths, report_json);
    if (dump->parsed()) return gmt::analyzer::dump_trace(dump_path, std::cout, std::cerr);
    if (peak->parsed()) return gmt::analyzer::peak_command(peak_options, std::cout, std::cerr);
    if (leaks->parsed())
      return gmt::analyzer::leaks_command(single_path, single_json, std::cout, std::cerr);
    if (oom->parsed())
      return gmt::analyzer::oom_command(single_path, single_json, std::cout, std::cerr);
  } catch (const std::exception& e) {
    std::cerr << "gpumemtrace: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
