// The analysis commands of the CLI. Each reads one or two traces, prints to `out` (text for
// people, or JSON whose keys README.md documents) and names problems on `err`. Each returns the
// exit status: 0, or 1 when a trace is not readable at all (check: 1 when a limit is exceeded,
// 2 when the trace is not readable).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

namespace gmt::analyzer {

struct PeakOptions {
  std::string path;
  std::optional<int> device;
  std::size_t top = 10;
  std::string by = "stack";  // "stack" | "library"
  bool json = false;
};
int peak_command(const PeakOptions& options, std::ostream& out, std::ostream& err);

int leaks_command(const std::string& path, bool json, std::ostream& out, std::ostream& err);

int oom_command(const std::string& path, bool json, std::ostream& out, std::ostream& err);

struct CheckOptions {
  std::string path;
  std::optional<uint64_t> max_peak;  // bytes, on any one device
  std::optional<uint64_t> max_leak;  // bytes left as probable leaks or unfreed
  bool no_oom = false;
};
int check_command(const CheckOptions& options, std::ostream& out, std::ostream& err);

int info_command(const std::string& path, bool json, std::ostream& out, std::ostream& err);

struct TimelineOptions {
  std::string path;
  std::string format;  // "csv" | "json" | "" (a chart for people)
  std::optional<int> device;
  double resolution_ms = 10;
  bool colour = false;
};
int timeline_command(const TimelineOptions& options, std::ostream& out, std::ostream& err);

int diff_command(const std::string& before, const std::string& after, bool json, std::ostream& out,
                 std::ostream& err);

struct ExportOptions {
  std::string path;
  std::string format;         // "perfetto" | "pprof" | "folded" | "speedscope" | "memviz"
  std::string output;         // a file, or "-" for `out`
  std::string what = "peak";  // folded: "peak" | "leaks"
};
// Writes the trace in a format other tools open (export_formats.h); 1 when the trace is not
// readable or the output cannot be written.
int export_command(const ExportOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gmt::analyzer
