// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace diff A B`: what a change cost: each device's peak, its bytes at the peak by role
// and by module, and per site the bytes live at the peak and never freed, before and after.
// Sites are matched by their symbolized frames (stack ids are per trace), modules by name. The
// text, the JSON and the page (--html) show the same figures: the page embeds the JSON.
#include <algorithm>
#include <map>
#include <set>

#include "analyzer/cli/command_support.h"
#include "analyzer/cli/commands.h"
#include "analyzer/cli/frames_option.h"
#include "analyzer/cli/output_file.h"
#include "analyzer/html/html_page.h"
#include "analyzer/html/run_comparison_data.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/model/leak_classes.h"
#include "analyzer/report/byte_size.h"
#include "analyzer/report/frames/frame_text.h"
#include "analyzer/report/frames/stack_frames.h"
#include "analyzer/report/json/json_fields.h"
#include "analyzer/report/roles_report.h"

namespace gmt::analyzer {
namespace {

struct SiteFigures {
  uint64_t peak = 0;    // bytes live at the peaks of the devices
  uint64_t leaked = 0;  // probable leaks and unfreed bytes
};

struct SiteChange {
  int device = -1;
  std::vector<SiteFrame> frames;
  SiteFigures before;
  SiteFigures after;
};

std::string frames_key(const std::vector<SiteFrame>& frames) {
  std::string key;
  for (const SiteFrame& f : frames) {
    // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on chained concatenation at -O3.
    const std::string module = f.module.value_or("");
    key += f.function;
    key += '\x1f';
    key += f.file.value_or("");
    key += '\x1f';
    key += std::to_string(f.line.value_or(0));
    key += '\x1f';
    key.append(module, module.find_last_of('/') + 1);
    key += '\x1e';
  }
  return key;
}

// Adds one trace's sites to `changes`, under their frames.
void add_sites(TraceSummary& trace, bool after, std::map<std::string, SiteChange>& changes) {
  std::vector<uint32_t> stacks;
  for (const auto& [ordinal, d] : trace.devices) {
    for (const PeakSite& s : d.peak_sites) stacks.push_back(s.stack);
  }
  for (const LeakGroup& g : trace.leaks) stacks.push_back(g.stack);
  ResolvedStacks frames = resolve_stacks(trace, stacks, trace.symbolization_warnings);
  // A site is its frames on one device: the same line on two devices is two rows.
  auto figures = [&](int device, uint32_t stack) -> SiteFigures& {
    SiteChange& change = changes[std::to_string(device) + '\x1d' + frames_key(frames[stack])];
    change.device = device;
    change.frames = frames[stack];
    return after ? change.after : change.before;
  };
  for (const auto& [ordinal, d] : trace.devices) {
    for (const PeakSite& s : d.peak_sites) figures(ordinal, s.stack).peak += s.bytes;
  }
  for (const LeakGroup& g : trace.leaks) {
    if (unintended(g.leak_class)) figures(g.device, g.stack).leaked += g.bytes;
  }
}

int64_t change_of(uint64_t before, uint64_t after) {
  return static_cast<int64_t>(after) - static_cast<int64_t>(before);
}

std::string signed_bytes(int64_t delta) {
  const uint64_t magnitude = delta < 0 ? static_cast<uint64_t>(-delta) : delta;
  return (delta < 0 ? "-" : "+") + human_bytes(magnitude);
}

std::vector<SiteChange> changed_sites(std::map<std::string, SiteChange>& by_key) {
  std::vector<SiteChange> changes;
  for (auto& [key, c] : by_key) {
    if (c.before.peak != c.after.peak || c.before.leaked != c.after.leaked)
      changes.push_back(std::move(c));
  }
  auto size = [](const SiteChange& c) {
    return std::llabs(change_of(c.before.peak, c.after.peak)) +
           std::llabs(change_of(c.before.leaked, c.after.leaked));
  };
  std::stable_sort(changes.begin(), changes.end(),
                   [&](const SiteChange& a, const SiteChange& b) { return size(a) > size(b); });
  return changes;
}

// The largest change first (by magnitude), ties in the order given.
void sort_by_change(nlohmann::ordered_json& rows) {
  std::stable_sort(rows.begin(), rows.end(),
                   [](const nlohmann::ordered_json& x, const nlohmann::ordered_json& y) {
                     return std::llabs(x["peak_change"].get<int64_t>()) >
                            std::llabs(y["peak_change"].get<int64_t>());
                   });
}

// Each role with bytes at the peak in either run: [{role, peak_before, peak_after,
// peak_change}], the largest change first.
nlohmann::ordered_json role_changes(const RoleBreakdown* before, const RoleBreakdown* after) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < kRoleCount; ++i) {
    const Role role = static_cast<Role>(i);
    const uint64_t was = before != nullptr ? (*before)[role].bytes : 0;
    const uint64_t is = after != nullptr ? (*after)[role].bytes : 0;
    if (was == 0 && is == 0) continue;
    rows.push_back({{"role", role_name(role)},
                    {"peak_before", was},
                    {"peak_after", is},
                    {"peak_change", change_of(was, is)}});
  }
  sort_by_change(rows);
  return rows;
}

// The modules whose bytes at the peak changed, matched by name: {"by_module": [{module,
// peak_before, peak_after, peak_change}] (the largest change first, at most kReportModules),
// "by_module_left_out"}.
nlohmann::ordered_json module_changes(const RoleBreakdown* before, const RoleBreakdown* after) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> bytes;
  if (before != nullptr) {
    for (const ModuleRoles& m : before->modules) bytes[m.module].first += m.total;
  }
  if (after != nullptr) {
    for (const ModuleRoles& m : after->modules) bytes[m.module].second += m.total;
  }
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& [module, figures] : bytes) {
    if (figures.first == figures.second) continue;
    rows.push_back({{"module", module},
                    {"peak_before", figures.first},
                    {"peak_after", figures.second},
                    {"peak_change", change_of(figures.first, figures.second)}});
  }
  sort_by_change(rows);
  const std::size_t left_out = rows.size() > kReportModules ? rows.size() - kReportModules : 0;
  if (left_out > 0)
    rows.erase(rows.begin() + static_cast<std::ptrdiff_t>(kReportModules), rows.end());
  return {{"by_module", std::move(rows)}, {"by_module_left_out", left_out}};
}

nlohmann::ordered_json diff_json(const TraceSummary& a, const TraceSummary& b,
                                 const std::vector<SiteChange>& changes) {
  using nlohmann::ordered_json;
  std::set<int> ordinals;
  for (const auto& [o, d] : a.devices) ordinals.insert(o);
  for (const auto& [o, d] : b.devices) ordinals.insert(o);
  ordered_json devices = ordered_json::array();
  for (int o : ordinals) {
    const uint64_t before = a.devices.count(o) ? a.devices.at(o).peak_bytes : 0;
    const uint64_t after = b.devices.count(o) ? b.devices.at(o).peak_bytes : 0;
    // A device one run did not use is absent there, not a peak of 0 B.
    ordered_json device = {{"device", o},
                           {"in_before", a.devices.count(o) > 0},
                           {"in_after", b.devices.count(o) > 0},
                           {"peak_before", before},
                           {"peak_after", after},
                           {"peak_change", change_of(before, after)}};
    // By role and by module, where either run has roles at its peak: which kind of memory moved
    // (eager against torch.compile, batch 64 against 128), and in which part of the model.
    const auto roles = [o](const TraceSummary& t) -> const RoleBreakdown* {
      const auto d = t.devices.find(o);
      return d != t.devices.end() && d->second.roles_at_peak ? &*d->second.roles_at_peak : nullptr;
    };
    const RoleBreakdown* ra = roles(a);
    const RoleBreakdown* rb = roles(b);
    if (ra != nullptr || rb != nullptr) {
      device["by_role"] = role_changes(ra, rb);
      device.update(module_changes(ra, rb));
    }
    devices.push_back(std::move(device));
  }
  ordered_json sites = ordered_json::array();
  for (const SiteChange& c : changes) {
    sites.push_back({{"device", c.device},
                     {"peak_before", c.before.peak},
                     {"peak_after", c.after.peak},
                     {"peak_change", change_of(c.before.peak, c.after.peak)},
                     {"leak_before", c.before.leaked},
                     {"leak_after", c.after.leaked},
                     {"leak_change", change_of(c.before.leaked, c.after.leaked)},
                     {"frames", frames_json(c.frames)}});
  }
  add_site_labels(sites);
  return {{"before", a.path}, {"after", b.path}, {"devices", devices}, {"sites", sites}};
}

void write_diff_text(const nlohmann::ordered_json& diff, const std::vector<SiteChange>& changes,
                     FrameMode mode, std::ostream& out) {
  constexpr std::size_t kShown = 10;
  constexpr std::size_t kShownModules = 10;
  out << "before " << diff["before"].get<std::string>() << "\nafter  "
      << diff["after"].get<std::string>() << "\n";
  for (const auto& d : diff["devices"]) {
    const auto peak = [&d](const char* side, const char* in) {
      return d[in].get<bool>() ? human_bytes(d[side].get<uint64_t>()) : std::string("absent");
    };
    out << "  " << device_name(d["device"].get<int>()) << " peak "
        << peak("peak_before", "in_before") << " -> " << peak("peak_after", "in_after") << " ("
        << signed_bytes(d["peak_change"].get<int64_t>()) << ")\n";
    if (!d.contains("by_role")) continue;
    const auto change_line = [&out](const nlohmann::ordered_json& r, const std::string& name) {
      out << name << " " << human_bytes(r["peak_before"].get<uint64_t>()) << " -> "
          << human_bytes(r["peak_after"].get<uint64_t>()) << " ("
          << signed_bytes(r["peak_change"].get<int64_t>()) << ")\n";
    };
    for (const auto& r : d["by_role"]) {
      if (r["peak_change"].get<int64_t>() != 0)
        change_line(r, "    " + r["role"].get<std::string>());
    }
    std::size_t modules = 0;
    for (const auto& m : d["by_module"]) {
      if (modules++ == kShownModules) break;
      change_line(m, "    module " + printable(m["module"].get<std::string>()));
    }
    const std::size_t more = d["by_module"].size() + d["by_module_left_out"].get<std::size_t>();
    if (more > kShownModules) out << "    ... " << more - kShownModules << " more modules\n";
  }
  if (changes.empty()) out << "  no site changed\n";
  for (std::size_t i = 0; i < changes.size() && i < kShown; ++i) {
    const SiteChange& c = changes[i];
    out << "  " << device_name(c.device) << ": at peak "
        << signed_bytes(change_of(c.before.peak, c.after.peak)) << ", never freed "
        << signed_bytes(change_of(c.before.leaked, c.after.leaked)) << "\n";
    write_frames(c.frames, 4, "      ", out, mode);
  }
  if (changes.size() > kShown) out << "  ... " << changes.size() - kShown << " more sites\n";
}

}  // namespace

int diff_command(const std::string& before, const std::string& after, bool json,
                 const std::string& html, FrameMode frames, std::ostream& out, std::ostream& err) {
  if (!html.empty()) {
    if (const int refused = refuse_output_over_input(html, {before, after}, err)) return refused;
  }
  TraceSummary a, b;
  try {
    a = load_trace(before, err);
    b = load_trace(after, err);
  } catch (const TraceError& e) {
    err << "gpumemtrace: " << e.what() << "\n";
    return 1;
  }
  std::map<std::string, SiteChange> by_key;
  add_sites(a, false, by_key);
  add_sites(b, true, by_key);
  const std::vector<SiteChange> changes = changed_sites(by_key);
  const nlohmann::ordered_json diff = diff_json(a, b, changes);
  if (!html.empty()) {
    // The page: both runs' timelines (read from their records again) beside the same figures.
    nlohmann::ordered_json data;
    try {
      HtmlLimits limits;
      limits.frame_mode = frames;
      data = run_comparison_data(diff, std::move(a), std::move(b), limits);
    } catch (const TraceError& e) {
      err << "gpumemtrace: " << e.what() << "\n";
      return 1;
    }
    if (write_output_file(html, std::cout, err,
                          [&](std::ostream& file) { write_run_comparison_page(data, file); }) != 0)
      return 1;
  }
  if (json) {
    out << diff.dump(2) << "\n";
  } else if (html.empty()) {
    write_diff_text(diff, changes, frames, out);
  }
  return 0;
}

Command add_diff_command(CLI::App& app) {
  struct Options {
    std::string before, after;
    bool json = false;
    std::string html;
    FrameMode frames = FrameMode::kUser;
  };
  auto options = std::make_shared<Options>();
  CLI::App* diff = app.add_subcommand(
      "diff", "Peak and leak changes by role, module and site between two traces");
  diff->add_option("before", options->before, "Trace before the change")->required();
  diff->add_option("after", options->after, "Trace after the change")->required();
  diff->add_flag("--json", options->json, "Machine-readable output (contract in docs/commands.md)");
  diff->add_option("--html", options->html,
                   "Write one self-contained page there instead of the text: both runs' "
                   "timelines by role aligned by step, and what moved by role, module and site");
  add_frames_option(*diff, options->frames);
  return {diff, [options] {
            return diff_command(options->before, options->after, options->json, options->html,
                                options->frames, std::cout, std::cerr);
          }};
}

}  // namespace gmt::analyzer
