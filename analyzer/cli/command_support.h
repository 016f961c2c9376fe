// SPDX-License-Identifier: Apache-2.0
// What the analysis commands (peak, leaks, oom, info, timeline, diff, check) share: loading a
// trace with its problems reported on stderr, and the report helpers they print with.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "analyzer/model/summarize_trace.h"
#include "analyzer/model/trace_summary.h"
#include "analyzer/report/frames/frame_text.h"
#include "analyzer/report/json/json_fields.h"
#include "analyzer/report/terminal_colour.h"

namespace gmt::analyzer {

// Summarizes `path` and names on `err` everything that had to be left out (the readable part is
// still returned). Throws TraceError when the file is not a readable trace at all.
// `history_said`: the command's output says the history line itself (info), so err does not.
TraceSummary load_trace(const std::string& path, std::ostream& err,
                        const SummaryOptions& options = {}, bool history_said = false);

// A usage error CLI11 raised while parsing `command`'s arguments, as our one line names it: the
// option or argument first, then what was wrong, in the words of every other usage error
// ("--pid: expected a whole number, got 'live/'", "--device: given 2 times; give it once",
// "missing AFTER (Trace after the change)", "unexpected argument 'x'"). main() prints it after
// "gpumemtrace: ", the one place CLI11's own messages are translated.
std::string usage_error_text(const CLI::ParseError& error, const CLI::App& command);

// Validators for option values, whose messages say what was expected and what was given; CLI11
// puts the option's name first ("--top: expected a positive whole number, got '-1'") and main()
// exits 2 on them, as on every usage error.
// 1, 2, 3...: no sign, no fraction, at most 2^32 - 1.
const CLI::Validator& positive_whole_number();
// A CUDA ordinal: a whole number, -1 (not known) or more.
const CLI::Validator& device_number();
// Milliseconds: a finite number above 0 and at most kMaxMilliseconds.
inline constexpr double kMaxMilliseconds = 1e12;
const CLI::Validator& milliseconds();
// Seconds between two looks: a finite number above 0 and at most kMaxIntervalSeconds (a day).
inline constexpr double kMaxIntervalSeconds = 86400;
const CLI::Validator& seconds_interval();

// --device-memory SIZE (any size syntax, above 0) into `memory`: the device size a what-if
// predicts for (whatif, and peak's remedies); `help` says what it changes.
CLI::Option* add_device_memory_option(CLI::App& command, std::optional<uint64_t>& memory,
                                      const std::string& help);

// "Trace files, or directories of them", the help text of every command that reads several.
inline constexpr const char* kTracesHelp =
    "Trace files, or directories of them (their *.gmt and *.gmt.<pid> traces)";

}  // namespace gmt::analyzer
