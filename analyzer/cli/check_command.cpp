// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace check`: a memory-regression gate for CI, for one trace or a whole job (traces or
// summaries). One line either way; the exit status says which.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "analyzer/cli/command_support.h"
#include "analyzer/cli/commands.h"
#include "analyzer/model/leak_classes.h"
#include "analyzer/report/byte_size.h"
#include "analyzer/report/job_view.h"
#include "analyzer/report/report.h"

namespace gmt::analyzer {
namespace {

// Bytes never freed that nobody meant to keep: probable leaks and the unfreed rest (not memory
// a caching allocator keeps, nor what a context's teardown released).
uint64_t leaked_bytes(const TraceSummary& trace) {
  uint64_t bytes = 0;
  for (const LeakGroup& g : trace.leaks) {
    if (unintended(g.leak_class)) bytes += g.bytes;
  }
  return bytes;
}

// "rank 2 (pid 1234) " when there are several processes to tell apart, else "".
std::string which(const ReportInput& input, std::size_t trace) {
  return input.traces.size() > 1 ? who(input.traces[trace]) + " " : "";
}

std::string ratio_text(double ratio) {
  if (std::isinf(ratio)) return "inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", ratio);
  return text;
}

// The first limit exceeded, as its FAIL line; "" when none is.
std::string first_failure(const CheckOptions& options, const ReportInput& input) {
  std::size_t peak_trace = 0, leak_trace = 0;
  const DeviceSummary* peak = nullptr;
  uint64_t most_leaked = 0, failed = 0;
  for (std::size_t i = 0; i < input.traces.size(); ++i) {
    const TraceSummary& t = input.traces[i];
    for (const auto& [ordinal, d] : t.devices) {
      if (peak == nullptr || d.peak_bytes > peak->peak_bytes) {
        peak = &d;
        peak_trace = i;
      }
    }
    if (const uint64_t leaked = leaked_bytes(t); leaked > most_leaked) {
      most_leaked = leaked;
      leak_trace = i;
    }
    failed += t.failures.size() + t.failures_not_kept;
  }
  const uint64_t peak_bytes = peak != nullptr ? peak->peak_bytes : 0;
  std::ostringstream line;
  if (options.max_peak && peak_bytes > *options.max_peak) {
    line << "FAIL: peak " << human_bytes(peak_bytes) << " (" << peak_bytes << " bytes) on "
         << which(input, peak_trace) << device_name(peak->device) << " exceeds --max-peak "
         << human_bytes(*options.max_peak) << "\n";
  } else if (options.max_leak && most_leaked > *options.max_leak) {
    line << "FAIL: " << human_bytes(most_leaked) << " (" << most_leaked
         << " bytes) never freed (probable leaks and unfreed)"
         << (input.traces.size() > 1 ? " on " + who(input.traces[leak_trace]) : "")
         << " exceeds --max-leak " << human_bytes(*options.max_leak) << "\n";
  } else if (options.no_oom && failed > 0) {
    line << "FAIL: " << failed << (failed == 1 ? " allocation" : " allocations")
         << " failed (--no-oom)\n";
  } else if (options.max_imbalance) {
    const JobView view = job_view(input);
    if (!view.highest) return "";
    const JobRow& top = view.rows[*view.highest];
    // A median of nothing against a highest peak of something: no ratio is high enough.
    const double ratio = view.spread          ? *view.spread
                         : top.peak_bytes > 0 ? std::numeric_limits<double>::infinity()
                                              : 1.0;
    if (ratio > *options.max_imbalance) {
      line << "FAIL: highest peak " << human_bytes(top.peak_bytes) << " (" << top.peak_bytes
           << " bytes) on " << who(input.traces[top.trace]) << " " << device_name(top.device)
           << " is " << ratio_text(ratio) << "x the median " << human_bytes(view.median_peak_bytes)
           << " of " << view.rows.size()
           << (view.rows.size() == 1 ? " process and device" : " processes and devices")
           << ", exceeds --max-imbalance " << options.imbalance_text << "\n";
    }
  }
  return line.str();
}

std::string ok_line(const ReportInput& input) {
  uint64_t peak_bytes = 0, leaked = 0, failed = 0;
  for (const TraceSummary& t : input.traces) {
    for (const auto& [ordinal, d] : t.devices) peak_bytes = std::max(peak_bytes, d.peak_bytes);
    leaked += leaked_bytes(t);
    failed += t.failures.size() + t.failures_not_kept;
  }
  std::ostringstream line;
  line << "OK: ";
  if (input.traces.size() > 1) line << input.traces.size() << " processes, highest ";
  line << "peak " << human_bytes(peak_bytes) << ", never freed " << human_bytes(leaked) << ", "
       << failed << (failed == 1 ? " failed allocation" : " failed allocations");
  if (input.traces.size() > 1) {
    const JobView view = job_view(input);
    if (view.spread) line << ", spread " << ratio_text(*view.spread) << "x";
  }
  line << "\n";
  return line.str();
}

}  // namespace

int check_command(const CheckOptions& options, std::ostream& out, std::ostream& err) {
  const ReportInput input = load_traces(options.paths, options.jobs);
  for (const UnreadableTrace& u : input.unreadable) err << "gpumemtrace: " << u.error << "\n";
  for (const TraceSummary& t : input.traces) {
    for (const std::string& problem : t.problems)
      err << "gpumemtrace: " << t.path << ": left out at " << problem << "\n";
  }
  // A gate that could not read all it was given has no verdict.
  if (!input.unreadable.empty() || input.traces.empty()) return 2;
  const std::string failure = first_failure(options, input);
  out << (failure.empty() ? ok_line(input) : failure);
  return failure.empty() ? 0 : 1;
}

Command add_check_command(CLI::App& app) {
  auto options = std::make_shared<CheckOptions>();
  CLI::App* check = app.add_subcommand(
      "check", "Exit 1 with a one-line reason when a limit is exceeded (a CI gate)");
  check->add_option("traces", options->paths, kTracesHelp)->required();
  const auto size_option = [check](const char* name, std::optional<uint64_t>& target,
                                   const char* help) {
    check
        ->add_option_function<std::string>(
            name,
            [name, &target](const std::string& text) {
              target = parse_byte_size(text);
              if (!target)
                throw CLI::ValidationError(
                    name,
                    "expected a size in whole bytes (4096, 512MiB, 1.5G), got '" + text + "'");
            },
            help)
        ->type_name("SIZE");
  };
  size_option("--max-peak", options->max_peak,
              "Most device-resident bytes on any device (of every process)");
  size_option("--max-leak", options->max_leak,
              "Most bytes never freed (leaks, unfreed), in any one process");
  check->add_flag("--no-oom", options->no_oom, "Fail when any allocation failed");
  check
      ->add_option_function<std::string>(
          "--max-imbalance",
          [options](const std::string& text) {
            char* end = nullptr;
            const double ratio = std::strtod(text.c_str(), &end);
            if (text.empty() || *end != '\0' || !std::isfinite(ratio) || ratio < 1) {
              throw CLI::ValidationError("--max-imbalance",
                                         "expected a ratio of 1 or more (1.5), got '" + text + "'");
            }
            options->max_imbalance = ratio;
            options->imbalance_text = text;
          },
          "Most the highest peak may be over the median of the processes' peaks (max/median)")
      ->type_name("RATIO");
  check
      ->add_option("-j,--jobs", options->jobs,
                   "Traces read at once (default: $GPUMEMTRACE_JOBS, else one per CPU)")
      ->check(CLI::Range(1u, 4096u));
  return {check, [options] { return check_command(*options, std::cout, std::cerr); }};
}

}  // namespace gmt::analyzer
