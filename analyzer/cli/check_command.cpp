// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace check`: a memory-regression gate for CI. One line either way; the exit status
// says which.
#include "analyzer/cli/command_support.h"
#include "analyzer/cli/commands.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/model/leak_classes.h"
#include "analyzer/report/byte_size.h"

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

const DeviceSummary* highest_peak(const TraceSummary& trace) {
  const DeviceSummary* highest = nullptr;
  for (const auto& [ordinal, d] : trace.devices) {
    if (highest == nullptr || d.peak_bytes > highest->peak_bytes) highest = &d;
  }
  return highest;
}

}  // namespace

int check_command(const CheckOptions& options, std::ostream& out, std::ostream& err) {
  TraceSummary trace;
  try {
    trace = load_trace(options.path, err);
  } catch (const TraceError& e) {
    err << "gpumemtrace: " << e.what() << "\n";
    return 2;
  }
  const DeviceSummary* peak = highest_peak(trace);
  const uint64_t peak_bytes = peak != nullptr ? peak->peak_bytes : 0;
  if (options.max_peak && peak_bytes > *options.max_peak) {
    out << "FAIL: peak " << human_bytes(peak_bytes) << " (" << peak_bytes << " bytes) on "
        << device_name(peak->device) << " exceeds --max-peak " << human_bytes(*options.max_peak)
        << "\n";
    return 1;
  }
  const uint64_t leaked = leaked_bytes(trace);
  if (options.max_leak && leaked > *options.max_leak) {
    out << "FAIL: " << human_bytes(leaked) << " (" << leaked
        << " bytes) never freed (probable leaks and unfreed) exceeds --max-leak "
        << human_bytes(*options.max_leak) << "\n";
    return 1;
  }
  const uint64_t failed = trace.failures.size() + trace.failures_not_kept;
  if (options.no_oom && failed > 0) {
    out << "FAIL: " << failed << (failed == 1 ? " allocation" : " allocations")
        << " failed (--no-oom)\n";
    return 1;
  }
  out << "OK: peak " << human_bytes(peak_bytes) << ", never freed " << human_bytes(leaked) << ", "
      << failed << (failed == 1 ? " failed allocation\n" : " failed allocations\n");
  return 0;
}

Command add_check_command(CLI::App& app) {
  auto options = std::make_shared<CheckOptions>();
  CLI::App* check = app.add_subcommand(
      "check", "Exit 1 with a one-line reason when a limit is exceeded (a CI gate)");
  check->add_option("trace", options->path, "Trace file")->required();
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
  size_option("--max-peak", options->max_peak, "Most device-resident bytes on any device");
  size_option("--max-leak", options->max_leak, "Most bytes never freed (leaks, unfreed)");
  check->add_flag("--no-oom", options->no_oom, "Fail when any allocation failed");
  return {check, [options] { return check_command(*options, std::cout, std::cerr); }};
}

}  // namespace gmt::analyzer
