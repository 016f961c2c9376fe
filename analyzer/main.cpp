// The gpumemtrace command line.
#include <CLI/CLI.hpp>
#include <iostream>
#include <string_view>

#include "analyzer/byte_size.h"
#include "analyzer/command_support.h"
#include "analyzer/commands.h"
#include "analyzer/dump_command.h"
#include "analyzer/html_report.h"
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
  CLI::App* info = app.add_subcommand("info", "What a trace holds and whether it is whole");
  for (CLI::App* command : {leaks, oom, info}) {
    command->add_option("trace", single_path, "Trace file")->required();
    command->add_flag("--json", single_json, "Machine-readable output (contract in README.md)");
  }

  gmt::analyzer::CheckOptions check_options;
  CLI::App* check = app.add_subcommand(
      "check", "Exit 1 with a one-line reason when a limit is exceeded (a CI gate)");
  check->add_option("trace", check_options.path, "Trace file")->required();
  const auto size_option = [check](const char* name, std::optional<uint64_t>& target,
                                   const char* help) {
    check
        ->add_option_function<std::string>(
            name,
            [name, &target](const std::string& text) {
              target = gmt::analyzer::parse_byte_size(text);
              if (!target) throw CLI::ValidationError(name, "not a size: " + text);
            },
            help)
        ->type_name("SIZE");
  };
  size_option("--max-peak", check_options.max_peak, "Most device-resident bytes on any device");
  size_option("--max-leak", check_options.max_leak, "Most bytes never freed (leaks, unfreed)");
  check->add_flag("--no-oom", check_options.no_oom, "Fail when any allocation failed");

  gmt::analyzer::TimelineOptions timeline_options;
  CLI::App* timeline = app.add_subcommand("timeline", "Live bytes over time per device and kind");
  timeline->add_option("trace", timeline_options.path, "Trace file")->required();
  timeline->add_option("--format", timeline_options.format, "csv or json (default: a chart)")
      ->check(CLI::IsMember({"csv", "json"}));
  timeline->add_option("--device", timeline_options.device, "Only this device");
  timeline->add_option("--resolution", timeline_options.resolution_ms, "Bucket width in ms")
      ->check(CLI::PositiveNumber);

  std::string diff_before, diff_after;
  bool diff_json = false;
  CLI::App* diff = app.add_subcommand("diff", "Peak and leak changes by site between two traces");
  diff->add_option("before", diff_before, "Trace before the change")->required();
  diff->add_option("after", diff_after, "Trace after the change")->required();
  diff->add_flag("--json", diff_json, "Machine-readable output (contract in README.md)");

  gmt::analyzer::ExportOptions export_options;
  CLI::App* export_ = app.add_subcommand(
      "export", "Write a trace for other viewers: perfetto, pprof, folded, speedscope, memviz");
  export_->add_option("trace", export_options.path, "Trace file")->required();
  export_->add_option("--format", export_options.format, "Output format")
      ->required()
      ->check(CLI::IsMember({"perfetto", "pprof", "folded", "speedscope", "memviz"}));
  export_->add_option("-o,--output", export_options.output, "Output file (\"-\": stdout)")
      ->required();
  export_->add_option("--what", export_options.what, "folded: the peak or the leaks")
      ->check(CLI::IsMember({"peak", "leaks"}));

  std::vector<std::string> html_paths;
  std::string html_output;
  CLI::App* html = app.add_subcommand(
      "html", "One self-contained HTML page: timelines by library, flame graph of the peak, leaks");
  html->add_option("traces", html_paths, "Trace files, or directories of them")->required();
  html->add_option("-o,--output", html_output, "The page to write")->required();

  CLI11_PARSE(app, argc, argv);

  try {
    if (report->parsed()) return report_command(report_paths, report_json);
    if (dump->parsed()) return gmt::analyzer::dump_trace(dump_path, std::cout, std::cerr);
    if (peak->parsed()) return gmt::analyzer::peak_command(peak_options, std::cout, std::cerr);
    if (leaks->parsed())
      return gmt::analyzer::leaks_command(single_path, single_json, std::cout, std::cerr);
    if (oom->parsed())
      return gmt::analyzer::oom_command(single_path, single_json, std::cout, std::cerr);
    if (info->parsed())
      return gmt::analyzer::info_command(single_path, single_json, std::cout, std::cerr);
    if (check->parsed()) return gmt::analyzer::check_command(check_options, std::cout, std::cerr);
    if (timeline->parsed()) {
      timeline_options.colour = gmt::analyzer::colour_wanted(1);
      return gmt::analyzer::timeline_command(timeline_options, std::cout, std::cerr);
    }
    if (diff->parsed())
      return gmt::analyzer::diff_command(diff_before, diff_after, diff_json, std::cout, std::cerr);
    if (export_->parsed())
      return gmt::analyzer::export_command(export_options, std::cout, std::cerr);
    if (html->parsed()) return gmt::analyzer::html_command(html_paths, html_output, std::cerr);
  } catch (const std::exception& e) {
    std::cerr << "gpumemtrace: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
