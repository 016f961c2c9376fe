// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/top/top_text.h"

#include <array>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/report/byte_size.h"
#include "analyzer/report/frames/frame_text.h"

namespace gmt::analyzer {
namespace {

using Json = nlohmann::ordered_json;
using Lines = std::vector<std::string>;

// The table's columns: every row, the totals' included, is made of these cells, so that a
// figure always stands under its name. A size is at most 9 characters ("+1023 MiB").
struct Column {
  const char* name;
  int width;
  bool left;
};
constexpr std::array<Column, 13> kColumns = {{{"PID", 8, true},
                                              {"RANK", 5, true},
                                              {"STATE", 9, true},
                                              {"DEV", 4, false},
                                              {"NOW", 10, false},
                                              {"PEAK", 10, false},
                                              {"PEAK AT", 10, false},
                                              {"GROWTH 1m", 10, false},
                                              {"FW ALLOC", 10, false},
                                              {"FW RESV", 10, false},
                                              {"NVML", 10, false},
                                              {"DRIVER", 10, false},
                                              {"FAILED", 7, false}}};
using Cells = std::array<std::string, kColumns.size()>;

std::string table_row(const Cells& cells, const std::string& command) {
  std::ostringstream row;
  for (std::size_t i = 0; i < kColumns.size(); ++i) {
    row << (kColumns[i].left ? std::left : std::right) << std::setw(kColumns[i].width) << cells[i];
  }
  if (!command.empty()) row << "  " << command;
  std::string text = row.str();
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

std::string bytes_or_dash(const Json& v) {
  return v.is_null() ? std::string("-") : human_bytes(v.get<uint64_t>());
}

std::string signed_bytes(const Json& v) {
  if (v.is_null()) return "-";
  const int64_t n = v.get<int64_t>();
  if (n == 0) return "0";
  return (n > 0 ? "+" : "-") + human_bytes(static_cast<uint64_t>(n > 0 ? n : -n));
}

std::string seconds(uint64_t ns) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << static_cast<double>(ns) / 1e9 << " s";
  return s.str();
}

std::string command_of(const Json& p) {
  std::string text;
  for (const Json& a : p["argv"]) {
    if (!text.empty()) text += ' ';
    text += a.get<std::string>();
  }
  return printable(text.size() > 40 ? text.substr(0, 37) + "..." : text);
}

std::string header_line(const Json& frame, bool interactive) {
  const Json& totals = frame["totals"];
  const uint64_t processes = totals["processes"].get<uint64_t>();
  std::string line =
      "gpumemtrace top: " + std::to_string(processes) + " process" + (processes == 1 ? "" : "es") +
      " (" + std::to_string(totals["running"].get<uint64_t>()) +
      " running), sort: " + frame["sort"].get<std::string>() + ", device: " +
      (frame["device_filter"].is_null() ? std::string("all")
                                        : std::to_string(frame["device_filter"].get<int>()));
  if (interactive) line += "   [s] sort  [d] device  [q] quit";
  return line;
}

// A process's lines: one per device shown, its identity and command on the first.
Lines process_rows(const Json& p) {
  Lines rows;
  const std::string rank = p["rank"].is_null() ? "-" : std::to_string(p["rank"].get<int>());
  const std::string failed = std::to_string(p["failed_alloc_count"].get<uint64_t>());
  Cells lead{};
  lead[0] = std::to_string(p["pid"].get<uint64_t>());
  lead[1] = rank;
  lead[2] = p["state"].get<std::string>();
  for (const Json& d : p["devices"]) {
    Cells c = rows.empty() ? lead : Cells{};
    c[3] = std::to_string(d["device"].get<int>());
    c[4] = human_bytes(d["live_bytes"].get<uint64_t>());
    c[5] = human_bytes(d["peak_bytes"].get<uint64_t>());
    c[6] = seconds(d["peak_time_ns"].get<uint64_t>());
    c[7] = signed_bytes(d["growth_1m_bytes"]);
    c[8] = bytes_or_dash(d["framework_allocated_bytes"]);
    c[9] = bytes_or_dash(d["framework_reserved_bytes"]);
    c[10] = bytes_or_dash(d["nvml_process_bytes"]);
    c[11] = bytes_or_dash(d["driver_used_bytes"]);
    if (rows.empty()) c[12] = failed;
    rows.push_back(table_row(c, rows.empty() ? command_of(p) : ""));
  }
  if (rows.empty()) {
    Cells c = lead;
    c[3] = "-";
    c[4] = "0";
    c[12] = failed;
    rows.push_back(table_row(c, command_of(p)));
  }
  return rows;
}

Lines total_rows(const Json& totals) {
  Cells c{};
  c[0] = "TOTAL";
  c[4] = human_bytes(totals["live_bytes"].get<uint64_t>());
  c[12] = std::to_string(totals["failed_alloc_count"].get<uint64_t>());
  Lines rows = {table_row(c, "")};
  for (const Json& d : totals["devices"]) {
    Cells per{};
    per[3] = std::to_string(d["device"].get<int>());
    per[4] = human_bytes(d["live_bytes"].get<uint64_t>());
    rows.push_back(table_row(per, ""));
  }
  return rows;
}

// The processes whose figures were rebuilt because records were written over before top read
// them: said for each, since what it showed before the rebuild missed them.
Lines behind_notes(const Json& frame) {
  Lines notes;
  for (const Json& p : frame["processes"]) {
    if (!p.contains("fell_behind")) continue;
    const Json& b = p["fell_behind"];
    notes.push_back("pid " + std::to_string(p["pid"].get<uint64_t>()) +
                    ": top fell behind its bounded trace (" +
                    std::to_string(b["records_missed"].get<uint64_t>()) +
                    " records written over before they were read); its figures were rebuilt "
                    "from the trace, history kept from " +
                    seconds(b["history_from_ns"].get<uint64_t>()));
  }
  return notes;
}

// The first process in the order chosen: its time and phases, and per device its bytes by kind
// and library and its largest live sites.
Lines details(const Json& frame) {
  Lines lines;
  if (frame["processes"].empty()) return lines;
  const Json& p = frame["processes"][0];
  std::string head = "pid " + std::to_string(p["pid"].get<uint64_t>()) + " (" +
                     p["state"].get<std::string>() + ", " +
                     seconds(p["trace_time_ns"].get<uint64_t>()) + ")";
  if (!p["open_phases"].empty()) {
    head += "  phases:";
    for (const Json& ph : p["open_phases"]) head += " [" + printable(ph.get<std::string>()) + "]";
  }
  lines.push_back(head);
  for (const Json& d : p["devices"]) {
    std::string kinds = "  device " + std::to_string(d["device"].get<int>()) + "  by kind:";
    for (const auto& [kind, bytes] : d["by_kind"].items())
      kinds += " " + kind + " " + human_bytes(bytes.get<uint64_t>());
    lines.push_back(kinds);
    std::string libraries = "            by library:";
    for (const auto& [lib, bytes] : d["by_library"].items())
      libraries += " " + printable(lib) + " " + human_bytes(bytes.get<uint64_t>());
    lines.push_back(libraries);
    for (const Json& site : d["top_sites"]) {
      std::ostringstream row;
      row << "    " << std::right << std::setw(11) << human_bytes(site["bytes"].get<uint64_t>())
          << std::setw(6) << site["count"].get<uint64_t>() << "x  "
          << site["frame"].get<std::string>() << "  ["
          << printable(site["library"].get<std::string>()) << "]";
      lines.push_back(row.str());
    }
  }
  return lines;
}

// The line cut to `columns` characters (UTF-8 sequences kept whole); 0: as it is.
std::string fit_width(const std::string& line, std::size_t columns) {
  if (columns == 0) return line;
  std::size_t shown = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) == 0x80) continue;  // a continuation
    if (shown == columns) return line.substr(0, i);
    ++shown;
  }
  return line;
}

}  // namespace

void write_top_text(const Json& frame, const TopScreen& screen, std::ostream& out) {
  const Lines head = {
      header_line(frame, screen.interactive), "",
      table_row(Cells{"PID", "RANK", "STATE", "DEV", "NOW", "PEAK", "PEAK AT", "GROWTH 1m",
                      "FW ALLOC", "FW RESV", "NVML", "DRIVER", "FAILED"},
                "COMMAND")};
  std::vector<Lines> processes;
  for (const Json& p : frame["processes"]) processes.push_back(process_rows(p));
  Lines after = total_rows(frame["totals"]);
  for (std::string& note : behind_notes(frame)) after.push_back(std::move(note));
  Lines tail;
  const Lines first = details(frame);
  if (!first.empty()) {
    tail.push_back("");
    tail.insert(tail.end(), first.begin(), first.end());
  }
  // Piped, the errors go to stderr, where a script looks for them; on the screen they are part
  // of the view.
  if (screen.interactive && frame.contains("errors")) {
    for (const Json& e : frame["errors"]) {
      tail.push_back("");
      tail.push_back(printable(e["error"].get<std::string>()));
    }
  }

  // On a terminal of known height, the lines fit under its last row (a line written there
  // would scroll the header away): the processes that fit, then what is left of the details.
  const bool fit = screen.interactive && screen.rows > 0;
  const std::size_t budget = fit ? screen.rows - 1 : SIZE_MAX;
  const auto fixed = head.size() + after.size();
  std::size_t room = budget > fixed ? budget - fixed : 0;
  std::size_t total_rows = 0;
  for (const Lines& rows : processes) total_rows += rows.size();
  Lines lines = head;
  std::size_t shown = 0;
  if (total_rows > room) {
    room = room > 0 ? room - 1 : 0;  // the line that says how many more
    std::size_t used = 0;
    while (shown < processes.size() && used + processes[shown].size() <= room)
      used += processes[shown++].size();
  } else {
    shown = processes.size();
  }
  for (std::size_t i = 0; i < shown; ++i)
    lines.insert(lines.end(), processes[i].begin(), processes[i].end());
  if (shown < processes.size()) {
    const std::size_t more = processes.size() - shown;
    lines.push_back("+" + std::to_string(more) + " more process" + (more == 1 ? "" : "es") +
                    " (s sorts, d picks a device)");
  }
  lines.insert(lines.end(), after.begin(), after.end());
  for (const std::string& line : tail) {
    if (lines.size() >= budget) break;
    lines.push_back(line);
  }
  if (lines.size() > budget) lines.resize(budget);
  const std::size_t columns = screen.interactive ? screen.columns : 0;
  for (const std::string& line : lines) out << fit_width(line, columns) << "\n";
}

}  // namespace gmt::analyzer
