// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace info`: what a trace is (process, time span), what it holds (records by type,
// allocations by kind) and whether it is whole.
#include "analyzer/cli/command_support.h"
#include "analyzer/cli/commands.h"
#include "analyzer/cli/dump_command.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/report/byte_size.h"
#include "analyzer/report/history_text.h"
#include "analyzer/report/trace_end_text.h"

namespace gmt::analyzer {
namespace {

// As the JSON outputs name the end, but a whole trace is "complete" here.
const char* integrity_name(TraceEnd end) {
  return end == TraceEnd::kExited ? "complete" : end_name(end);
}

std::string integrity_text(const TraceSummary& t) {
  switch (t.end) {
    case TraceEnd::kExited:
      return "complete (the process exited normally)";
    case TraceEnd::kCut:
      if (died_of_signal(t))
        return "cut (the process was ended by " + signal_text(*t.signal, t.pid) +
               "; every record up to then is here)";
      return "cut (the process did not exit normally; every record up to then is here)";
    case TraceEnd::kTruncated:
    case TraceEnd::kCorrupt:
      return std::string(integrity_name(t.end)) + " at byte " + std::to_string(t.end_offset) +
             ": " + t.end_reason;
    case TraceEnd::kStopped:
      return "stopped at " + std::to_string(t.stop_time_ns) + " ns: " + t.stop_reason +
             " (every record up to then is here)";
    case TraceEnd::kExec:
      return "exec (the process replaced itself with " + t.exec_program + " at " +
             std::to_string(t.exec_time_ns) + " ns; every record up to then is here)";
    case TraceEnd::kFailed:
      return "recording failed: " + t.end_reason;
    case TraceEnd::kRunning:
      return "still running (pid " + std::to_string(t.pid) +
             "): every record written so far is here";
  }
  return "";
}

// Non-zero counts by name.
nlohmann::ordered_json record_counts_json(const TraceSummary& t) {
  nlohmann::ordered_json counts = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < t.record_counts.size(); ++i) {
    if (t.record_counts[i] > 0) counts[record_type_name(i)] = t.record_counts[i];
  }
  return counts;
}

nlohmann::ordered_json kind_counts_json(const std::array<uint64_t, format::kMemoryKindCount>& n) {
  nlohmann::ordered_json counts = nlohmann::ordered_json::object();
  for (std::size_t k = 0; k < n.size(); ++k) {
    const auto kind = static_cast<format::MemoryKind>(k);
    if (n[k] > 0) counts[std::string(format::memory_kind_name(kind))] = n[k];
  }
  return counts;
}

template <std::size_t N>
nlohmann::ordered_json api_counts_json(const std::array<uint64_t, N>& n) {
  nlohmann::ordered_json counts = nlohmann::ordered_json::object();
  for (std::size_t a = 0; a < n.size(); ++a) {
    if (n[a] > 0) counts[std::string(format::api_name(static_cast<format::Api>(a)))] = n[a];
  }
  return counts;
}

std::string format_version(const TraceSummary& t) {
  return std::to_string(t.format_major) + "." + std::to_string(t.format_minor);
}

nlohmann::ordered_json info_json(const TraceSummary& t) {
  nlohmann::ordered_json info = {
      {"path", t.path},
      {"format", format_version(t)},
      {"pid", t.pid},
      {"ppid", t.ppid},
      {"host", t.host},
      {"argv", t.argv},
      {"wall_start_ns", t.wall_start_ns},
      {"duration_ns", t.duration_ns},
      {"integrity", integrity_name(t.end)},
      {"signal", signal_json(died_of_signal(t) ? t.signal : std::nullopt)},
      {"open_at_end", open_at_end_json(t.open_at_end)},
      {"truncated", t.truncated()},
      {"history", history_json(t)},
      {"events", t.events},
      {"records", record_counts_json(t)},
      {"allocations_by_kind", kind_counts_json(t.allocs_by_kind)},
      {"failures_by_kind", kind_counts_json(t.failures_by_kind)},
      {"allocations_by_api", api_counts_json(t.allocs_by_api)},
      {"frees_by_api", api_counts_json(t.frees_by_api)},
      {"stacks", t.stacks.size()},
      {"modules", t.modules.size()},
      {"threads", t.threads.size()},
      {"unmatched_frees", t.unmatched_frees},
      {"problems", t.problems}};
  if (t.truncated()) {
    info["end_offset"] = t.end_offset;
    info["end_reason"] = t.end_reason;
  }
  return info;
}

void write_counts(const nlohmann::ordered_json& counts, std::ostream& out) {
  bool first = true;
  for (const auto& [name, n] : counts.items()) {
    out << (first ? "" : ", ") << name << " " << n.get<uint64_t>();
    first = false;
  }
  out << (first ? "none\n" : "\n");
}

void write_info_text(const TraceSummary& t, std::ostream& out) {
  std::string command;
  for (const std::string& arg : t.argv) {
    if (!command.empty()) command += ' ';
    command += printable(arg);
  }
  out << "trace        " << t.path << " (format " << format_version(t) << ")\n";
  out << "process      pid " << t.pid << " (parent " << t.ppid << ") on " << printable(t.host)
      << ": " << command << "\n";
  out << "duration     " << human_duration(t.duration_ns) << "\n";
  out << "integrity    " << integrity_text(t) << "\n";
  if (died_of_signal(t))
    out << "signal       " << signal_text(*t.signal, t.pid) << " on thread " << t.signal->thread
        << " at " << human_duration(t.signal->time_ns) << "\n";
  if (t.end != TraceEnd::kExited && !t.open_at_end.empty())
    out << "open at end  " << open_at_end_text(t) << "\n";
  if (const std::string history = history_text(t); !history.empty())
    out << "history      " << history << "\n";
  out << "records      ";
  write_counts(record_counts_json(t), out);
  out << "allocations  ";
  write_counts(kind_counts_json(t.allocs_by_kind), out);
  out << "failed       ";
  write_counts(kind_counts_json(t.failures_by_kind), out);
  out << "by API       ";
  write_counts(api_counts_json(t.allocs_by_api), out);
  out << "frees by API ";
  write_counts(api_counts_json(t.frees_by_api), out);
  out << "stacks       " << t.stacks.size() << ", modules " << t.modules.size() << ", threads "
      << t.threads.size() << "\n";
  for (const std::string& problem : t.problems) out << "left out     " << problem << "\n";
}

}  // namespace

int info_command(const std::string& path, bool json, FrameMode /*frames: none printed*/,
                 std::ostream& out, std::ostream& err) {
  TraceSummary trace;
  try {
    trace = load_trace(path, err, {}, /*history_said=*/true);
  } catch (const TraceError& e) {
    err << "gpumemtrace: " << e.what() << "\n";
    return 1;
  }
  if (json) {
    out << info_json(trace).dump(2) << "\n";
  } else {
    write_info_text(trace, out);
  }
  return 0;
}

Command add_info_command(CLI::App& app) {
  return add_trace_json_command(app, "info", "What a trace holds and whether it is whole",
                                &info_command, false);
}

}  // namespace gmt::analyzer
