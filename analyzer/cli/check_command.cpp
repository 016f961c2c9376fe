// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace check`: a memory-regression gate for CI, for one trace or a whole job (traces or
// summaries). One line either way, the exit status says which; before it, a note for each
// trace that does not hold the process's whole life, whose figures are of what was recorded.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/cli/command_support.h"
#include "analyzer/cli/commands.h"
#include "analyzer/model/leak_classes.h"
#include "analyzer/report/byte_size.h"
#include "analyzer/report/job_view.h"
#include "analyzer/report/report.h"
#include "format/size_text.h"

namespace gmt::analyzer {
namespace {

// Whether what is live at the trace's end was never freed: the process exited, or replaced
// itself with exec, with every record written. A trace cut, stopped or short of records ends
// before the program did: what it shows live may have been freed after, or its free left out.
bool leaks_proven(const TraceSummary& trace) {
  return trace.end == TraceEnd::kExited || trace.end == TraceEnd::kExec;
}

// Bytes never freed that nobody meant to keep: probable leaks and the unfreed rest (not memory
// a caching allocator keeps, nor what a context's teardown released), live at the trace's end
// whether or not that end is the program's.
uint64_t live_unintended_bytes(const TraceSummary& trace) {
  uint64_t bytes = 0;
  for (const LeakGroup& g : trace.leaks) {
    if (unintended(g.leak_class)) bytes += g.bytes;
  }
  return bytes;
}

// Those bytes, where they are proven never freed; what the gate counts.
uint64_t leaked_bytes(const TraceSummary& trace) {
  return leaks_proven(trace) ? live_unintended_bytes(trace) : 0;
}

// How a trace that is not complete ended, after its path: "was cut (...)".
std::string incomplete_text(const TraceSummary& t) {
  switch (t.end) {
    case TraceEnd::kExited:
      return "is complete";
    case TraceEnd::kCut:
      return "was cut (the process did not exit normally)";
    case TraceEnd::kStopped:
      return "was stopped (recording stopped: " + printable(t.stop_reason) + ")";
    case TraceEnd::kTruncated:
      return "is truncated at byte " + std::to_string(t.end_offset) + " (" +
             printable(t.end_reason) + ")";
    case TraceEnd::kCorrupt:
      return "is damaged at byte " + std::to_string(t.end_offset) + " (" + printable(t.end_reason) +
             ")";
    case TraceEnd::kExec:
      return "ended in exec (" + printable(t.exec_program) + ")";
    case TraceEnd::kFailed:
      return "holds no record (recording failed: " + printable(t.end_reason) + ")";
    case TraceEnd::kRunning:
      return "is still being written: still running (pid " + std::to_string(t.pid) + ")";
  }
  return "ended in an unknown way";
}

// One line per trace that is not complete: what the gate could look at, and what it left out
// of --max-leak; one per trace that grew past its bound.
std::string incomplete_notes(const ReportInput& input) {
  std::ostringstream notes;
  for (const TraceSummary& t : input.traces) {
    const format::HistoryWindow& h = t.history;
    if (h.max_size != 0 && h.written_bytes > h.max_size) {
      notes << "note: " << printable(t.path) << " grew to " << human_bytes(h.written_bytes)
            << ", past its bound of " << human_bytes(h.max_size)
            << " (the live set's checkpoints did not fit in it)\n";
    }
    if (t.end == TraceEnd::kExited) continue;
    notes << "note: " << printable(t.path) << " " << incomplete_text(t)
          << ": gated on what was recorded";
    if (const uint64_t live = live_unintended_bytes(t); live > 0 && !leaks_proven(t)) {
      notes << "; " << human_bytes(live) << " (" << live
            << " bytes) live at its end not counted as never freed (not proven leaks)";
    }
    notes << "\n";
  }
  return notes.str();
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

// The peaks --max-imbalance compares: one per process (its highest device's), or one per device
// of every process (the job view's rows), with the highest and the median of them.
struct Imbalance {
  std::vector<JobRow> rows;
  std::optional<std::size_t> highest;  // the first row of the highest peak
  uint64_t median_bytes = 0;           // of the rows (the mean of the two middle ones if even)
  double ratio = 1.0;                  // highest / median; infinite for a median of 0
};

Imbalance imbalance(const ReportInput& input, bool per_device) {
  Imbalance out;
  const JobView view = job_view(input);
  for (const JobRow& row : view.rows) {
    if (!per_device && !out.rows.empty() && out.rows.back().trace == row.trace) {
      if (row.peak_bytes > out.rows.back().peak_bytes) out.rows.back() = row;
      continue;
    }
    out.rows.push_back(row);
  }
  if (out.rows.empty()) return out;
  std::vector<uint64_t> peaks;
  for (std::size_t i = 0; i < out.rows.size(); ++i) {
    peaks.push_back(out.rows[i].peak_bytes);
    if (!out.highest || out.rows[i].peak_bytes > out.rows[*out.highest].peak_bytes) out.highest = i;
  }
  std::sort(peaks.begin(), peaks.end());
  const std::size_t mid = peaks.size() / 2;
  out.median_bytes =
      peaks.size() % 2 == 1 ? peaks[mid] : peaks[mid - 1] + (peaks[mid] - peaks[mid - 1]) / 2;
  const uint64_t top = out.rows[*out.highest].peak_bytes;
  // A median of nothing against a highest peak of something: no ratio is high enough.
  out.ratio = out.median_bytes > 0
                  ? static_cast<double>(top) / static_cast<double>(out.median_bytes)
              : top > 0 ? std::numeric_limits<double>::infinity()
                        : 1.0;
  return out;
}

// What the imbalance compared, after "the median ... of N": "4 processes (each by its highest
// device's peak)" or "6 devices (of every process)".
std::string compared_text(const Imbalance& imbalance, bool per_device) {
  const std::size_t n = imbalance.rows.size();
  if (per_device)
    return std::to_string(n) + (n == 1 ? " device" : " devices") +
           " (--imbalance-per device: every device of every process)";
  return std::to_string(n) + (n == 1 ? " process" : " processes") +
         " (each by its highest device's peak)";
}

// --max-imbalance's FAIL line; "" when the spread is within it.
std::string imbalance_failure(const CheckOptions& options, const ReportInput& input) {
  const Imbalance found = imbalance(input, options.imbalance_per_device);
  if (!found.highest || found.ratio <= *options.max_imbalance) return "";
  const JobRow& top = found.rows[*found.highest];
  std::ostringstream line;
  line << "FAIL: highest peak " << human_bytes(top.peak_bytes) << " (" << top.peak_bytes
       << " bytes) on " << who(input.traces[top.trace]) << " " << device_name(top.device) << " is "
       << ratio_text(found.ratio) << "x the median " << human_bytes(found.median_bytes) << " of "
       << compared_text(found, options.imbalance_per_device) << ", exceeds --max-imbalance "
       << options.imbalance_text << "\n";
  return line.str();
}

// Of a job's failed allocations, which process had how many: ", 1 on rank 1 (pid 10) and 1 on
// rank 3 (pid 12)"; "" for one trace.
std::string failed_where(const ReportInput& input) {
  if (input.traces.size() < 2) return "";
  std::vector<std::string> parts;
  for (const TraceSummary& t : input.traces) {
    if (const uint64_t n = t.failures.size() + t.failures_not_kept; n > 0)
      parts.push_back(std::to_string(n) + " on " + who(t));
  }
  std::string text;
  for (std::size_t i = 0; i < parts.size(); ++i)
    text += (i == 0 ? ", " : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return text;
}

// Each role over its --max-role limit at a device's peak, as its FAIL line (the device where it
// holds the most). A trace without roles (no PyTorch hooks) has none to exceed: said once, in a
// note.
std::vector<std::string> role_failures(const CheckOptions& options, const ReportInput& input) {
  std::vector<std::string> lines;
  for (const auto& [role, limit] : options.max_roles) {
    uint64_t most = 0;
    std::size_t trace = 0;
    const DeviceSummary* where = nullptr;
    for (std::size_t i = 0; i < input.traces.size(); ++i) {
      for (const auto& [ordinal, d] : input.traces[i].devices) {
        if (!d.roles_at_peak) continue;
        const uint64_t bytes = (*d.roles_at_peak)[role].bytes;
        if (bytes <= limit || bytes <= most) continue;
        most = bytes;
        trace = i;
        where = &d;
      }
    }
    if (where == nullptr) continue;
    std::ostringstream line;
    line << "FAIL: " << role_name(role) << " " << human_bytes(most) << " (" << most
         << " bytes) at the peak on " << which(input, trace) << device_name(where->device)
         << " exceeds --max-role " << role_name(role) << "=" << human_bytes(limit) << "\n";
    lines.push_back(line.str());
  }
  return lines;
}

// The first trace whose leaks are not proven (it did not end with its process), and how many are
// so: what --max-leak cannot vouch for.
std::pair<const TraceSummary*, std::size_t> unproven_leaks(const ReportInput& input) {
  const TraceSummary* first = nullptr;
  std::size_t count = 0;
  for (const TraceSummary& t : input.traces) {
    if (leaks_proven(t)) continue;
    if (first == nullptr) first = &t;
    ++count;
  }
  return {first, count};
}

// Every limit exceeded, each as its FAIL line; none when all hold.
std::vector<std::string> failures(const CheckOptions& options, const ReportInput& input) {
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
  std::vector<std::string> lines;
  const auto add = [&lines](const std::ostringstream& line) { lines.push_back(line.str()); };
  if (options.max_peak && peak_bytes > *options.max_peak) {
    std::ostringstream line;
    line << "FAIL: peak " << human_bytes(peak_bytes) << " (" << peak_bytes << " bytes) on "
         << which(input, peak_trace) << device_name(peak->device) << " exceeds --max-peak "
         << human_bytes(*options.max_peak) << "\n";
    add(line);
  }
  if (options.max_leak && most_leaked > *options.max_leak) {
    std::ostringstream line;
    line << "FAIL: " << human_bytes(most_leaked) << " (" << most_leaked
         << " bytes) never freed (probable leaks and unfreed)"
         << (input.traces.size() > 1 ? " on " + who(input.traces[leak_trace]) : "")
         << " exceeds --max-leak " << human_bytes(*options.max_leak) << "\n";
    add(line);
  }
  // What was live at the end of a trace that ended before its process did may have been freed
  // after: no leak figure can be vouched for there, so the gate does not pass on it.
  if (const auto [first, count] = unproven_leaks(input);
      options.max_leak && first != nullptr && !options.allow_incomplete) {
    std::ostringstream line;
    line << "FAIL: " << printable(first->path) << " " << incomplete_text(*first);
    if (count > 1) line << ", and " << count - 1 << " more not complete";
    line << ": --max-leak cannot tell what it never freed (--allow-incomplete: gate on what was "
            "recorded)\n";
    add(line);
  }
  if (options.no_oom && failed > 0) {
    std::ostringstream line;
    line << "FAIL: " << failed << (failed == 1 ? " allocation" : " allocations") << " failed"
         << failed_where(input) << " (--no-oom)\n";
    add(line);
  }
  if (options.max_imbalance) {
    if (const std::string imbalance = imbalance_failure(options, input); !imbalance.empty()) {
      lines.push_back(imbalance);
    }
  }
  for (std::string& role : role_failures(options, input)) lines.push_back(std::move(role));
  if (options.require_complete) {
    std::size_t incomplete = 0;
    const TraceSummary* first = nullptr;
    for (const TraceSummary& t : input.traces) {
      if (t.end == TraceEnd::kExited) continue;
      if (first == nullptr) first = &t;
      ++incomplete;
    }
    if (first != nullptr) {
      std::ostringstream line;
      line << "FAIL: " << printable(first->path) << " " << incomplete_text(*first);
      if (incomplete > 1) line << ", and " << incomplete - 1 << " more not complete";
      line << " (--require-complete)\n";
      add(line);
    }
  }
  return lines;
}

std::string ok_line(const CheckOptions& options, const ReportInput& input) {
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
  if (input.traces.size() > 1 || options.imbalance_per_device) {
    const Imbalance found = imbalance(input, options.imbalance_per_device);
    if (found.highest && found.median_bytes > 0)
      line << ", spread " << ratio_text(found.ratio) << "x "
           << (options.imbalance_per_device ? "between devices" : "between processes");
  }
  line << "\n";
  return line.str();
}

}  // namespace

int check_command(const CheckOptions& options, std::ostream& out, std::ostream& err) {
  const ReportInput input = load_traces(options.paths, options.jobs);
  for (const UnreadableTrace& u : input.unreadable) err << "gpumemtrace: " << u.error << "\n";
  for (const std::string& same : input.same_process) err << "gpumemtrace: " << same << "\n";
  for (const TraceSummary& t : input.traces) {
    for (const std::string& problem : t.problems)
      err << "gpumemtrace: " << t.path << ": left out at " << problem << "\n";
  }
  // A gate that could not read all it was given has no verdict.
  if (!input.unreadable.empty() || input.traces.empty()) return 2;
  const std::vector<std::string> failed = failures(options, input);
  out << incomplete_notes(input);
  // A role limit cannot vouch for a trace that carries no roles: said, not passed in silence.
  for (const TraceSummary& t : input.traces) {
    if (!options.max_roles.empty() && !t.roles_recorded)
      out << "note: " << printable(t.path)
          << " has no roles (no PyTorch roles hooks recorded): --max-role gates nothing there\n";
  }
  if (failed.empty()) out << ok_line(options, input);
  for (const std::string& line : failed) out << line;
  return failed.empty() ? 0 : 1;
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
              target = format::parse_byte_size(text);
              if (!target)
                throw CLI::ValidationError(
                    name, "expected a size (4096, 512MiB, 8.04 GiB, 8g), got '" + text + "'");
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
      ->add_option_function<std::vector<std::string>>(
          "--max-role",
          [options](const std::vector<std::string>& texts) {
            for (const std::string& text : texts) {
              const std::size_t eq = text.find('=');
              const std::optional<Role> role =
                  eq == std::string::npos ? std::nullopt : role_of_name(text.substr(0, eq));
              const std::optional<uint64_t> size =
                  eq == std::string::npos ? std::nullopt
                                          : format::parse_byte_size(text.substr(eq + 1));
              if (!role || !size) {
                throw CLI::ValidationError(
                    "--max-role",
                    "expected ROLE=SIZE (activation=20GiB; roles: parameter, buffer, "
                    "gradient, optimizer_state, activation, temporary, input, "
                    "allocator_cache, library, cuda_graph, kv_cache, state, output, unknown), "
                    "got '" +
                        text + "'");
              }
              options->max_roles.emplace_back(*role, *size);
            }
          },
          "Most bytes of a role at any device's peak (activation=20GiB); repeatable")
      ->type_name("ROLE=SIZE");
  check->add_flag("--require-complete", options->require_complete,
                  "Fail when a trace is not complete (its process did not exit normally)");
  check->add_flag("--allow-incomplete", options->allow_incomplete,
                  "Let --max-leak gate a trace that ended before its process (what was live at "
                  "its end is not counted as never freed)");
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
      ->add_option_function<std::string>(
          "--imbalance-per",
          [options](const std::string& text) {
            if (text != "process" && text != "device")
              throw CLI::ValidationError("--imbalance-per",
                                         "expected process or device, got '" + text + "'");
            options->imbalance_per_device = text == "device";
          },
          "What --max-imbalance compares: process (default: each process by its highest "
          "device's peak, the ranks of a job) or device (every device of every process)")
      ->type_name("process|device");
  check
      ->add_option("-j,--jobs", options->jobs,
                   "Traces read at once (default: $GPUMEMTRACE_JOBS, else one per CPU)")
      ->check(CLI::Range(1u, 4096u));
  return {check, [options] { return check_command(*options, std::cout, std::cerr); }};
}

}  // namespace gmt::analyzer
