// The gpumemtrace command line.
#include <CLI/CLI.hpp>
#include <iostream>

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
    if (t.truncated()) {
      std::cerr << "gpumemtrace: " << t.path << ": reading stopped at byte " << t.end_offset << ": "
                << t.end_reason << "\n";
    }
  }
  return input.unreadable.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gpumemtrace: where did my GPU memory go?"};
  app.require_subcommand(1);

  gmt::analyzer::RunOptions run_options;
  CLI::App* run = app.add_subcommand("run", "Run a program under the profiler: gpumemtrace run -- CMD ARGS...");
  run->add_option("-o,--output", run_options.output_pattern,
                   "Trace path pattern: %p pid, %h host, %r rank (default gpumemtrace.%p.gmt)");
  // Everything from the program's name on belongs to the program, its options included.
  run->prefix_command();

  std::vector<std::string> report_paths;
  bool report_json = false;
  CLI::App* report = app.add_subcommand("report", "Summarize one or more traces");
  report->add_option("traces", report_paths, "Trace files")->required();
  report->add_flag("--json", report_json, "Machine-readable output (contract in README.md)");

  CLI11_PARSE(app, argc, argv);

  try {
    if (run->parsed()) {
      run_options.command = run->remaining();
      if (!run_options.command.empty() && run_options.command.front() == "--") {
        run_options.command.erase(run_options.command.begin());
      }
      return gmt::analyzer::run_traced(run_options);
    }
    if (report->parsed()) return report_command(report_paths, report_json);
  } catch (const std::exception& e) {
    std::cerr << "gpumemtrace: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
