// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace leaks`: allocations never freed, grouped by site and classified (teardown,
// cached, library_cache, probable_leak, unfreed), and address space reserved, apart.
#include <iomanip>
#include <map>

#include "analyzer/cli/command_support.h"
#include "analyzer/cli/commands.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/model/leak_classes.h"
#include "analyzer/model/owner_library.h"
#include "analyzer/report/byte_size.h"
#include "analyzer/report/frames/stack_frames.h"
#include "analyzer/report/roles_report.h"

namespace gmt::analyzer {
namespace {

struct ClassTotal {
  uint64_t bytes = 0;
  uint64_t count = 0;
};

std::map<LeakClass, ClassTotal> totals_by_class(const TraceSummary& trace) {
  std::map<LeakClass, ClassTotal> totals;
  for (const LeakGroup& g : trace.leaks) {
    totals[g.leak_class].bytes += g.bytes;
    totals[g.leak_class].count += g.count;
  }
  return totals;
}

uint64_t resident_live_at_exit(const TraceSummary& trace) {
  uint64_t bytes = 0;
  for (const auto& [ordinal, d] : trace.devices) bytes += d.live_bytes;
  return bytes;
}

// Reserved address space by device, in device order (-1, none mapped, first).
std::map<int, ClassTotal> reservations_by_device(const TraceSummary& trace) {
  std::map<int, ClassTotal> totals;
  for (const ReservationGroup& r : trace.reservations) {
    totals[r.device].bytes += r.bytes;
    totals[r.device].count += r.count;
  }
  return totals;
}

nlohmann::ordered_json reservations_json(const TraceSummary& trace, ResolvedStacks& frames,
                                         OwnerLibraryCache& owners) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const ReservationGroup& r : trace.reservations) {
    rows.push_back({{"bytes", r.bytes},
                    {"count", r.count},
                    {"device", r.device},
                    {"frames", frames_json(frames[r.stack])},
                    {"stack", r.stack},
                    {"library", owners.of(r.stack)}});
  }
  return rows;
}

// Address space is no memory: one line per device, apart from what was never freed.
void write_reservations_text(const TraceSummary& trace, std::ostream& out) {
  for (const auto& [device, total] : reservations_by_device(trace)) {
    out << "address space reserved, not memory: " << human_bytes(total.bytes) << " in "
        << total.count << (total.count == 1 ? " reservation" : " reservations") << " ("
        << device_name(device) << ")\n";
  }
}

// The group of what a caching allocator holds free (its blocks' groups have their stacks).
bool is_cache(const LeakGroup& g) {
  return g.allocator >= 0 && g.stack == 0 && g.leak_class == LeakClass::kCached;
}

std::string rate_text(double bytes_per_s) {
  return "+" + human_bytes(static_cast<uint64_t>(bytes_per_s)) + "/s";
}

nlohmann::ordered_json leaks_json(const TraceSummary& trace, ResolvedStacks& frames) {
  using nlohmann::ordered_json;
  OwnerLibraryCache owners(trace);
  ordered_json groups = ordered_json::array();
  for (const LeakGroup& g : trace.leaks) {
    ordered_json row = {
        {"bytes", g.bytes},
        {"count", g.count},
        {"class", leak_class_name(g.leak_class)},
        {"frames", frames_json(is_cache(g) ? std::vector<SiteFrame>{} : frames[g.stack])},
        {"device", g.device},
        {"resident_bytes", g.resident_bytes},
        {"stack", g.stack},
        {"library", is_cache(g) ? std::string(allocator_name(g.allocator)) : owners.of(g.stack)}};
    if (g.leak_class == LeakClass::kProbableLeak) {
      row["growth_bytes_per_s"] = g.growth_bytes_per_s;
      row["freed_at_exit"] = g.freed_at_exit;
    }
    if (g.allocator >= 0) {
      row["allocator"] = allocator_name(g.allocator);
      row["level"] = is_cache(g) ? "cache" : "block";
      if (const auto role = leak_role(trace, g)) row["role"] = *role;
    } else {
      row.update(site_stats_json(site_of(trace, g.device, g.stack)));
    }
    groups.push_back(std::move(row));
  }
  add_site_labels(groups);
  ordered_json by_class = ordered_json::object();
  for (const auto& [c, total] : totals_by_class(trace)) {
    by_class[leak_class_name(c)] = {{"bytes", total.bytes}, {"count", total.count}};
  }
  return {{"trace", trace.path},
          {"live_at_exit_bytes", resident_live_at_exit(trace)},
          {"by_class", by_class},
          {"leaks", groups},
          {"reservations", reservations_json(trace, frames, owners)}};
}

void write_leaks_text(const TraceSummary& trace, ResolvedStacks& frames, FrameMode mode,
                      bool colour, std::ostream& out) {
  constexpr std::size_t kGroupsShown = 10;
  constexpr std::size_t kFramesShown = 4;
  if (trace.leaks.empty()) {
    out << trace.path << ": every allocation was freed\n";
    write_reservations_text(trace, out);
    return;
  }
  if (trace.end == TraceEnd::kRunning) {
    // The process goes on: what it holds now may yet be freed.
    out << "not freed yet in " << trace.path << ", still running (pid " << trace.pid << ") ("
        << human_bytes(resident_live_at_exit(trace)) << " device-resident live now)\n";
  } else {
    out << "never freed in " << trace.path << " (" << human_bytes(resident_live_at_exit(trace))
        << " device-resident live at exit)\n";
  }
  for (const auto& [c, total] : totals_by_class(trace)) {
    out << "  " << std::left << std::setw(15) << leak_class_name(c) << std::right << std::setw(10)
        << human_bytes(total.bytes) << " in " << total.count << "\n";
  }
  OwnerLibraryCache owners(trace);
  for (std::size_t i = 0; i < trace.leaks.size() && i < kGroupsShown; ++i) {
    const LeakGroup& g = trace.leaks[i];
    const bool leak = g.leak_class == LeakClass::kProbableLeak;
    out << "  " << std::setw(10) << human_bytes(g.bytes) << " in " << g.count << "  "
        << paint(leak_class_name(g.leak_class), leak ? "1;31" : "33", colour);
    if (leak) out << " (" << rate_text(g.growth_bytes_per_s) << ")";
    if (g.freed_at_exit) out << " (freed only at exit)";
    if (is_cache(g)) {
      // No stack made it: what the allocator keeps free, not an allocation of unknown origin.
      out << "  " << device_name(g.device) << "  " << allocator_cache_name(g.allocator) << "\n";
      continue;
    }
    out << "  " << device_name(g.device) << "  " << printable(owners.of(g.stack));
    if (const auto role = leak_role(trace, g)) out << "  role " << *role;
    out << "\n";
    write_frames(frames[g.stack], kFramesShown, "        ", out, mode);
  }
  if (trace.leaks.size() > kGroupsShown) {
    out << "  ... " << trace.leaks.size() - kGroupsShown << " more groups (--json lists all)\n";
  }
  write_reservations_text(trace, out);
}

}  // namespace

int leaks_command(const std::string& path, bool json, FrameMode mode, std::ostream& out,
                  std::ostream& err) {
  TraceSummary trace;
  try {
    trace = load_trace(path, err);
  } catch (const TraceError& e) {
    err << "gpumemtrace: " << e.what() << "\n";
    return 1;
  }
  std::vector<uint32_t> stacks;
  for (const LeakGroup& g : trace.leaks) stacks.push_back(g.stack);
  for (const ReservationGroup& r : trace.reservations) stacks.push_back(r.stack);
  ResolvedStacks frames = resolve_stacks(trace, stacks, trace.symbolization_warnings);
  if (json) {
    out << leaks_json(trace, frames).dump(2) << "\n";
  } else {
    write_leaks_text(trace, frames, mode, colour_wanted(1), out);
  }
  return 0;
}

Command add_leaks_command(CLI::App& app) {
  return add_trace_json_command(app, "leaks", "Allocations never freed, grouped and classified",
                                &leaks_command, true);
}

}  // namespace gmt::analyzer
