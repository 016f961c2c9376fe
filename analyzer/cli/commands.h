// SPDX-License-Identifier: Apache-2.0
// The one place that lists the CLI's commands. Each lives in a file of its own
// (cli/NAME_command.cpp) that registers its subcommand and options on the app and says how to run
// it once parsed.
//
// The analysis commands each read one or two traces, print to `out` (text for people, or JSON
// whose keys docs/commands.md documents) and name problems on `err`. Each returns the exit status:
// 0, or 1 when a trace is not readable at all (check: 1 when a limit is exceeded, 2 when the trace
// is not readable).
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/model/roles/role.h"
#include "analyzer/report/frames/frame_policy.h"

namespace gmt::analyzer {

// A subcommand registered on the app, and what runs it (returning the exit status) once the
// command line has chosen it.
struct Command {
  CLI::App* subcommand;
  std::function<int()> run;
};

// A command that reads one trace and prints text or, with --json, JSON: `run(path, json, out,
// err)` once parsed.
using TraceJsonRun = int (*)(const std::string&, bool, FrameMode, std::ostream&, std::ostream&);
// `stacks`: the command prints stacks, and takes --frames (frames_option.h).
Command add_trace_json_command(CLI::App& app, const char* name, const char* description,
                               TraceJsonRun run, bool stacks);

// Every command, registered on `app` in the order `--help` lists them.
std::vector<Command> add_commands(CLI::App& app);

Command add_run_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_dump_command(CLI::App& app);
Command add_peak_command(CLI::App& app);
Command add_leaks_command(CLI::App& app);
Command add_oom_command(CLI::App& app);
Command add_info_command(CLI::App& app);
Command add_check_command(CLI::App& app);
Command add_timeline_command(CLI::App& app);
Command add_diff_command(CLI::App& app);
Command add_export_command(CLI::App& app);
Command add_html_command(CLI::App& app);
Command add_top_command(CLI::App& app);
Command add_summarize_command(CLI::App& app);
Command add_whatif_command(CLI::App& app);

// `run` parses its own arguments (everything from the program's name on belongs to the
// program, "--" and options included, which CLI11 cannot express): `argv` is what follows
// "run". Returns the exit status.
int run_command(int argc, const char* const* argv);

struct PeakOptions {
  std::string path;
  std::optional<int> device;
  std::size_t top = 10;
  std::string by = "stack";  // "stack" | "library"
  bool json = false;
  FrameMode frames = FrameMode::kUser;
  std::string phase;  // --phase: the peak while it was open; "" for the trace's
  // --device-memory: remedies for a device of this size (default: the trace's)
  std::optional<uint64_t> device_memory;
};
int peak_command(const PeakOptions& options, std::ostream& out, std::ostream& err);

int leaks_command(const std::string& path, bool json, FrameMode frames, std::ostream& out,
                  std::ostream& err);

int oom_command(const std::string& path, bool json, FrameMode frames, std::ostream& out,
                std::ostream& err);

struct CheckOptions {
  std::vector<std::string> paths;    // traces, summaries, directories (load_traces)
  std::optional<uint64_t> max_peak;  // bytes, on any one device of any process
  std::optional<uint64_t> max_leak;  // bytes left as probable leaks or unfreed, in any process
  bool no_oom = false;
  bool require_complete = false;  // fail on a trace whose process did not exit normally
  // --max-leak on a trace that ended before its process: gate on what was recorded, not fail.
  bool allow_incomplete = false;
  std::optional<double> max_imbalance;  // highest peak / median of the processes' peaks
  // --max-role ROLE=SIZE: the most bytes of a role (RoleBreakdown) at any device's peak.
  std::vector<std::pair<Role, uint64_t>> max_roles;
  std::string imbalance_text;  // as given, for the FAIL line
  // --imbalance-per: compare the processes (ranks), each by its highest device's peak, or every
  // device of every process.
  bool imbalance_per_device = false;
  unsigned jobs = 0;
};
int check_command(const CheckOptions& options, std::ostream& out, std::ostream& err);

int info_command(const std::string& path, bool json, std::ostream& out, std::ostream& err);

// `whatif`: 1 when the trace is not readable or holds no PyTorch block events.
struct WhatIfCommandOptions {
  std::string path;
  std::optional<std::string> alloc_conf;  // PYTORCH_CUDA_ALLOC_CONF, already parsed once
  std::optional<uint64_t> device_memory;
  std::optional<double> batch_scale;
  std::optional<std::string> batch_from;  // a trace of the same program at another batch
  std::optional<std::string> shard;       // N[:zero1|zero2|zero3|fsdp], already parsed once
  std::vector<std::string> dtype;         // ROLE=DTYPE, each already parsed once
  bool largest_batch = false;  // the largest batch scale that fits (also with batch_scale)
  std::optional<std::string> empty_cache_at;  // step, backward or a phase's name
  std::vector<std::string> checkpoint;        // modules, qualified names
  bool set_to_none = false;                   // zero_grad(set_to_none=True)
  bool json = false;
};
int whatif_command(const WhatIfCommandOptions& options, std::ostream& out, std::ostream& err);

inline constexpr double kDefaultResolutionMs = 10;
struct TimelineOptions {
  std::string path;
  std::string format;  // "csv" | "json" | "" (a chart for people)
  std::optional<int> device;
  std::optional<double> resolution_ms;  // none: kDefaultResolutionMs, or the chart's own
  bool colour = false;
};
int timeline_command(const TimelineOptions& options, std::ostream& out, std::ostream& err);

int diff_command(const std::string& before, const std::string& after, bool json, FrameMode frames,
                 std::ostream& out, std::ostream& err);

struct ExportOptions {
  std::vector<std::string> paths;  // one trace; jsonl: traces, summaries, directories
  std::string format;         // "perfetto" | "pprof" | "folded" | "speedscope" | "memviz" | "jsonl"
  unsigned jobs = 0;          // jsonl: as load_traces's
  std::string output;         // a file, or "-" for `out`
  std::string what = "peak";  // folded: "peak" | "leaks"
  FrameMode frames = FrameMode::kUser;  // folded, speedscope, pprof, memviz
};
// Writes the trace in a format other tools open (export_formats.h); 1 when the trace is not
// readable or the output cannot be written.
int export_command(const ExportOptions& options, std::ostream& out, std::ostream& err);

// Reads the traces (files, or directories of *.gmt files) and writes the HTML page to `output`.
// Unreadable traces are named on `err` and the page reports the others; returns 1 when one was
// unreadable or the page could not be written, else 0. `jobs`: as load_traces's.
int html_command(const std::vector<std::string>& paths, const std::string& output,
                 std::ostream& err, unsigned jobs = 0, FrameMode frames = FrameMode::kUser);

// `top`: watches the traces (files, directories, the traces of --pid processes) while they are
// written and prints a frame every `interval` seconds: text, or a JSON line per frame
// (docs/top.md); interactive when stdout is a terminal. 1 when a --pid names no traced process.
struct TopOptions {
  std::vector<std::string> paths;
  std::vector<int> pids;
  double interval = 1;
  bool once = false;
  bool json = false;
};
int top_command(const TopOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gmt::analyzer
