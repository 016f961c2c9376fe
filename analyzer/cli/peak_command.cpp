// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace peak`: everything live at each device's high-water mark, grouped by stack or by
// owning library; the groups (with the "other" row when --top cuts) add up to the peak exactly.
#include <algorithm>
#include <iomanip>
#include <map>

#include "analyzer/cli/command_support.h"
#include "analyzer/cli/commands.h"
#include "analyzer/cli/frames_option.h"
#include "analyzer/model/hidden_pool.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/model/leak_classes.h"
#include "analyzer/model/owner_library.h"
#include "analyzer/report/byte_size.h"
#include "analyzer/report/frames/stack_frames.h"
#include "analyzer/report/hidden_pool_note.h"
#include "analyzer/report/inference_report.h"
#include "analyzer/report/remedies_report.h"
#include "analyzer/report/roles_report.h"

namespace gmt::analyzer {
namespace {

// A phase's name as the text shows it: in quotes, since names hold spaces ("pytest test_x #3").
std::string phase_in_quotes(std::string_view name) {
  return "\"" + printable(name) + "\"";
}

struct Group {
  uint64_t bytes = 0;
  uint64_t count = 0;
  uint32_t stack = 0;      // by stack
  std::string library;     // by library
  std::size_t folded = 0;  // the "other" row: how many groups it stands for
  int allocator = -1;      // by stack: a caching allocator's blocks or cache (PeakSite's)
  bool cache = false;
};

std::vector<Group> groups_at_peak(const DeviceSummary& d, const std::string& by,
                                  OwnerLibraryCache& owners) {
  std::vector<Group> groups;
  if (by == "library") {
    std::map<std::string, Group> by_library;
    for (const PeakSite& site : d.peak_sites) {
      Group& g = by_library[owners.of(site.stack)];
      g.library = owners.of(site.stack);
      g.bytes += site.bytes;
      g.count += site.count;
    }
    for (auto& [name, g] : by_library) groups.push_back(std::move(g));
    std::stable_sort(groups.begin(), groups.end(),
                     [](const Group& a, const Group& b) { return a.bytes > b.bytes; });
  } else {
    // Where an allocator reported its blocks: its blocks by site and its cache, not its segments.
    for (const PeakSite& site : d.shown_peak_sites())
      groups.push_back({site.bytes, site.count, site.stack, "", 0, site.allocator, site.cache});
  }
  return groups;
}

// The first `top` groups, and one "other" row for the rest, so that the total is unchanged.
std::vector<Group> keep_top(std::vector<Group> groups, std::size_t top) {
  if (groups.size() <= top) return groups;
  Group other;
  other.folded = groups.size() - top;
  for (std::size_t i = top; i < groups.size(); ++i) {
    other.bytes += groups[i].bytes;
    other.count += groups[i].count;
  }
  groups.resize(top);
  groups.push_back(other);
  return groups;
}

// ": its phases are \"a\", \"b\"...", or ": it has none", for an unknown --phase.
std::string phases_named(const TraceSummary& trace) {
  constexpr std::size_t kNamed = 10;
  if (trace.phases.empty()) return " (it has no phase)";
  std::vector<std::string> names;
  for (const PhaseStats& p : trace.phases) {
    if (std::find(names.begin(), names.end(), p.name) == names.end()) names.push_back(p.name);
  }
  std::string text = " (its phases: ";
  for (std::size_t i = 0; i < names.size() && i < kNamed; ++i)
    text += (i > 0 ? ", " : "") + phase_in_quotes(names[i]);
  if (names.size() > kNamed) text += ", and " + std::to_string(names.size() - kNamed) + " more";
  return text + ")";
}

// The modules a peak lists by name, largest first.
constexpr std::size_t kModulesShown = 10;

struct DevicePeak {
  const DeviceSummary* device;
  std::vector<Group> groups;
};

nlohmann::ordered_json peak_json(const TraceSummary& trace, const std::vector<DevicePeak>& peaks,
                                 const std::string& by, ResolvedStacks& frames) {
  using nlohmann::ordered_json;
  ordered_json devices = ordered_json::array();
  for (const DevicePeak& p : peaks) {
    ordered_json groups = ordered_json::array();
    for (const Group& g : p.groups) {
      ordered_json row = {{"bytes", g.bytes}, {"count", g.count}};
      if (g.folded > 0) {
        row["other"] = true;
        row["groups"] = g.folded;
      } else if (by == "library") {
        row["library"] = g.library;
      } else if (g.allocator >= 0) {
        row["stack"] = g.stack;
        row["frames"] = frames_json(g.cache ? std::vector<SiteFrame>{} : frames[g.stack]);
        row["allocator"] = allocator_name(g.allocator);
        row["level"] = g.cache ? "cache" : "block";
        SiteStats blocks;  // a block site's own figures; none for the cache
        if (!g.cache) {
          const auto site = trace.block_sites.find(
              block_site_key(static_cast<uint32_t>(g.allocator), p.device->device, g.stack));
          if (site != trace.block_sites.end()) blocks.allocations = site->second.allocations;
        }
        row.update(site_stats_json(blocks));
      } else {
        row["stack"] = g.stack;
        row["frames"] = frames_json(frames[g.stack]);
        row.update(site_stats_json(site_of(trace, p.device->device, g.stack)));
      }
      groups.push_back(std::move(row));
    }
    ordered_json device = {{"device", p.device->device},
                           {"peak_bytes", p.device->peak_bytes},
                           {"peak_time_ns", p.device->peak_time_ns}};
    if (trace.phase_window)
      device["live_at_phase_start_bytes"] = trace.phase_window->live_at_start(p.device->device);
    if (const auto pool = hidden_pool(trace, *p.device))
      device["hidden_pool"] = hidden_pool_json(*pool, p.device->device);
    if (p.device->roles_at_peak) {
      device.update(roles_json(*p.device->roles_at_peak, kModulesShown));
      if (const auto inference = peak_inference(*p.device))
        device["inference"] = inference_json(*inference);
    }
    add_site_labels(groups);
    device["groups"] = groups;
    devices.push_back(std::move(device));
  }
  ordered_json answer = {{"trace", trace.path}, {"by", by}};
  if (const auto& window = trace.phase_window) {
    answer["phase"] = {
        {"name", window->name}, {"runs", window->runs}, {"first_start_ns", window->first_start_ns}};
  }
  answer["devices"] = devices;
  return answer;
}

void write_peak_text(const TraceSummary& trace, const std::vector<DevicePeak>& peaks,
                     const std::string& by, ResolvedStacks& frames, FrameMode mode,
                     OwnerLibraryCache& owners, std::ostream& out) {
  constexpr std::size_t kFramesShown = 4;
  for (const DevicePeak& p : peaks) {
    uint64_t count = 0;
    for (const Group& g : p.groups) count += g.cache ? 0 : g.count;  // a cache's are segments
    out << "peak of " << device_name(p.device->device);
    if (trace.phase_window) out << " in phase " << phase_in_quotes(trace.phase_window->name);
    out << ": " << human_bytes(p.device->peak_bytes) << " (" << p.device->peak_bytes
        << " bytes) at " << human_duration(p.device->peak_time_ns) << ", in " << count
        << (count == 1 ? " allocation" : " allocations") << "\n";
    if (const auto& window = trace.phase_window) {
      out << "  the phase ran " << window->runs << (window->runs == 1 ? " time" : " times")
          << ", first at " << human_duration(window->first_start_ns) << ", with "
          << human_bytes(window->live_at_start(p.device->device)) << " live as it started\n";
    }
    if (const auto pool = hidden_pool(trace, *p.device))
      out << "  note: " << hidden_pool_note(*pool, p.device->device) << "\n";
    // In the user's terms first: what the bytes are for and which modules hold them.
    if (p.device->roles_at_peak) {
      write_roles_text(*p.device->roles_at_peak, trace.roles_recorded, kModulesShown, "", "  ",
                       out);
      if (const auto inference = peak_inference(*p.device))
        write_inference_text(*inference, "", "  ", out);
      out << "  by " << (by == "library" ? "library" : "site") << "\n";
    }
    for (const Group& g : p.groups) {
      out << "  " << std::setw(10) << human_bytes(g.bytes) << std::setw(8) << g.count << "  ";
      if (g.folded > 0) {
        const char* what = by == "library" ? (g.folded == 1 ? " library" : " libraries")
                                           : (g.folded == 1 ? " site" : " sites");
        out << "other (" << g.folded << what << ")\n";
      } else if (by == "library") {
        out << printable(g.library) << "\n";
      } else if (g.cache) {
        out << "(" << allocator_name(g.allocator) << " cache: free)\n";
      } else if (g.allocator >= 0) {
        out << printable(owners.of(g.stack)) << " (" << allocator_name(g.allocator) << " blocks)\n";
        write_frames(frames[g.stack], kFramesShown, "        ", out, mode);
      } else {
        out << printable(owners.of(g.stack)) << "\n";
        write_frames(frames[g.stack], kFramesShown, "        ", out, mode);
      }
    }
  }
}

}  // namespace

int peak_command(const PeakOptions& options, std::ostream& out, std::ostream& err) {
  // Remedies only where the run may not fit: a smaller device asked for (searched while the
  // trace is read), or a run that failed (seen once it is read). A run that fits costs nothing.
  std::optional<std::future<std::optional<allocator::Remedies>>> remedies;
  if (options.device_memory) remedies = start_remedies(options.path, options.device_memory);
  TraceSummary trace;
  SummaryOptions summary;
  summary.peak_phase = options.phase;
  try {
    trace = load_trace(options.path, err, summary);
  } catch (const TraceError& e) {
    err << "gpumemtrace: " << e.what() << "\n";
    return 1;
  }
  if (!options.phase.empty() && !trace.phase_window) {
    err << "gpumemtrace: " << options.path << ": no phase " << phase_in_quotes(options.phase)
        << " in the trace" << phases_named(trace) << "\n";
    return 1;
  }
  OwnerLibraryCache owners(trace);
  std::vector<DevicePeak> peaks;
  std::vector<uint32_t> stacks;
  for (const auto& [ordinal, d] : trace.devices) {
    if (options.device && *options.device != ordinal) continue;
    DevicePeak p{&d, keep_top(groups_at_peak(d, options.by, owners), options.top)};
    for (const Group& g : p.groups) stacks.push_back(g.stack);
    peaks.push_back(std::move(p));
  }
  if (options.device && peaks.empty()) {
    err << "gpumemtrace: " << options.path << ": no device " << *options.device
        << " in the trace\n";
    return 1;
  }
  const bool failed = std::any_of(trace.devices.begin(), trace.devices.end(),
                                  [](const auto& d) { return d.second.failed_alloc_count > 0; });
  if (!remedies && failed) remedies = start_remedies(options.path, std::nullopt);
  ResolvedStacks frames;
  if (options.by == "stack") frames = resolve_stacks(trace, stacks, trace.symbolization_warnings);
  // Remedies where the run does not fit the device (the recorded one, or --device-memory).
  std::optional<allocator::Remedies> found;
  if (remedies) {
    found = remedies->get();
  } else if (std::any_of(trace.devices.begin(), trace.devices.end(),
                         [](const auto& d) { return !d.second.peak_block_sites.empty(); })) {
    found.emplace();  // what the search would have said, without its replay
    found->applicable = true;
    found->none_because = "the run fits: nothing to remedy";
  }
  if (options.json) {
    nlohmann::ordered_json answer = peak_json(trace, peaks, options.by, frames);
    if (found) add_remedies_json(*found, answer);
    out << answer.dump(2) << "\n";
  } else if (peaks.empty()) {
    out << options.path << ": no device memory was allocated\n";
  } else {
    write_peak_text(trace, peaks, options.by, frames, options.frames, owners, out);
    if (found && !found->list.empty()) write_remedies_text(*found, out);
  }
  return 0;
}

Command add_peak_command(CLI::App& app) {
  auto options = std::make_shared<PeakOptions>();
  CLI::App* peak = app.add_subcommand("peak", "Everything live at each device's high-water mark");
  peak->add_option("trace", options->path, "Trace file")->required();
  peak->add_option("--device", options->device, "Only this device (default: every device)")
      ->check(device_number());
  peak->add_option("--top", options->top, "Groups shown; the rest make one \"other\" row")
      ->check(positive_whole_number())
      ->capture_default_str();
  peak->add_option("--by", options->by, "Group by call stack or by owning library")
      ->check(CLI::IsMember({"stack", "library"}))
      ->capture_default_str();
  peak->add_option("--phase", options->phase,
                   "The peak while this phase was open (a name as `report` lists its phases: "
                   "an NVTX range or gpumemtrace_phase_push), over all its runs")
      ->check(CLI::Validator(
          [](const std::string& name) {
            return name.empty() ? std::string("expected a phase's name, got ''") : std::string();
          },
          "NAME"));
  add_device_memory_option(*peak, options->device_memory,
                           "Remedies for a device of this size (default: the trace's)");
  peak->add_flag("--json", options->json, "Machine-readable output (contract in docs/commands.md)");
  add_frames_option(*peak, options->frames);
  return {peak, [options] { return peak_command(*options, std::cout, std::cerr); }};
}

}  // namespace gmt::analyzer
