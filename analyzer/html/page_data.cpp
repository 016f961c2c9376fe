// SPDX-License-Identifier: Apache-2.0
#include "analyzer/html/page_data.h"

#include "analyzer/report/history_text.h"

#include <algorithm>
#include <future>
#include <optional>
#include <queue>
#include <unordered_map>

#include "analyzer/export/export_record_pass.h"
#include "analyzer/export/export_stacks.h"
#include "analyzer/model/leak_classes.h"
#include "analyzer/model/owner_library.h"
#include "analyzer/model/timeline/library_timeline.h"
#include "analyzer/model/worker_pool.h"
#include "analyzer/report/byte_size.h"
#include "analyzer/report/cuda_error_name.h"
#include "analyzer/report/frames/stack_frames.h"
#include "analyzer/report/hidden_pool_note.h"
#include "analyzer/report/history_text.h"
#include "analyzer/report/inference_report.h"
#include "analyzer/report/job_view.h"
#include "analyzer/report/json/json_fields.h"
#include "analyzer/report/remedies_report.h"
#include "analyzer/report/roles_report.h"
#include "analyzer/report/views_report.h"

namespace gmt::analyzer {
namespace {

using nlohmann::ordered_json;

// The views the page draws as lines over the stacked bytes (the others are in the views table).
constexpr const char* kDrawnViews[] = {"nvml_process", "driver_used", "framework_allocated",
                                       "framework_reserved"};

// Devices the page shows: host memory that names no device is no device of its own.
bool shown(int ordinal, const DeviceSummary& d) {
  return ordinal >= 0 || d.peak_bytes > 0;
}

class DataBuilder {
 public:
  explicit DataBuilder(const HtmlLimits& limits) : limits_(limits) {}

  std::string text(const std::string& s) const {
    if (s.size() <= limits_.text) return s;
    std::string cut = s.substr(0, limits_.text);
    cut += "...";
    return cut;
  }

  // [function, "file:line" | "(module)" | ""]: short, as the page prints one frame per line.
  ordered_json frame(const SiteFrame& f) const {
    // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on chained concatenation at -O3.
    std::string where;
    if (f.file) {
      where = *f.file;
      if (f.line) {
        where += ':';
        where += std::to_string(*f.line);
      }
    } else if (f.module) {
      where = "(";
      where.append(*f.module, f.module->find_last_of('/') + 1);
      where += ')';
    }
    return ordered_json::array({text(f.function), text(where)});
  }

  // {"stack": index into the trace's table of stacks}: each stack is written once, however many
  // sites, holders and leaks name it.
  ordered_json stack(const ResolvedStacks& resolved, uint32_t id) {
    const auto [at, added] = stack_index_.try_emplace(id, stacks_.size());
    if (added) {
      ordered_json frames = ordered_json::array();
      const auto it = resolved.find(id);
      const ShownStack shown =
          it == resolved.end() ? ShownStack{} : shown_stack(it->second, limits_.frame_mode);
      const std::size_t size = shown.frames.size();
      for (std::size_t i = 0; i < size && i < limits_.frames; ++i)
        frames.push_back(frame(shown.frames[i]));
      stacks_.push_back(
          {{"frames", frames}, {"via", text(shown.via)}, {"more_frames", size - frames.size()}});
    }
    return {{"stack", at->second}};
  }

  ordered_json site(const TraceSummary& trace, const ResolvedStacks& resolved, const PeakSite& s) {
    OwnerLibraryCache& owners = owners_of(trace);
    // A caching allocator's free cache has no stack: its row is named for it.
    ordered_json out = {
        {"bytes", s.bytes},
        {"count", s.count},
        {"library", s.cache ? allocator_cache_name(s.allocator) : owners.of(s.stack)}};
    out.update(stack(resolved, s.cache ? 0 : s.stack));
    if (s.allocator >= 0) {
      out["allocator"] = allocator_name(s.allocator);
      out["level"] = s.cache ? "cache" : "block";
    }
    return out;
  }

  // The icicle of what was live at the device's peak: root = the device, then each stack from
  // its outermost frame to the allocating one. The largest nodes are kept, expanded greedily, and
  // what each kept node's hidden children hold is one "other" child, so the bytes still add up.
  // The icicle of what was live at the device's peak: root = the device, then each stack from
  // its outermost frame to the allocating one. The largest nodes are kept, expanded greedily.
  // What a kept node's hidden children hold is grouped by the line that allocated it (the
  // user's frame), then by owning library, so that the peak's bytes keep their names; what is
  // left past those groups is one "(smaller stacks)" child, so the bytes still add up.
  ordered_json flame(const TraceSummary& t, int ordinal, const DeviceSummary& d,
                     const ResolvedStacks& resolved) {
    struct Node {
      std::string label, where;
      uint64_t bytes = 0;
      std::map<std::pair<std::string, std::string>, std::size_t> children;
      std::vector<uint32_t> sites;  // the peak sites under it
    };
    const std::vector<PeakSite>& peak_sites = d.shown_peak_sites();
    std::vector<std::pair<std::string, std::string>> leaf_of(peak_sites.size());
    std::vector<std::size_t> end_node(peak_sites.size(), 0);  // the node each site's path ends at
    std::vector<Node> nodes(1);
    nodes[0].label = device_root(ordinal);
    for (uint32_t i = 0; i < peak_sites.size(); ++i) {
      const PeakSite& s = peak_sites[i];
      nodes[0].bytes += s.bytes;
      std::vector<std::pair<std::string, std::string>> path;
      if (s.cache) {
        path.emplace_back(allocator_cache_name(s.allocator), "");
      } else if (const auto it = resolved.find(s.stack);
                 it != resolved.end() && !it->second.empty()) {
        const std::vector<SiteFrame> shown = flame_frames(it->second, limits_.frame_mode);
        for (auto f = shown.rbegin(); f != shown.rend(); ++f) {
          const ordered_json shown = frame(*f);
          path.emplace_back(text(frame_label(*f)), shown[1].get<std::string>());
        }
        // The allocating line: the user's frame (the first shown one that is no "via" line).
        for (const SiteFrame& f : shown) {
          const ordered_json shown_frame = frame(f);
          if (!shown_frame[1].get<std::string>().empty() || &f == &shown.back()) {
            leaf_of[i] = {text(frame_label(f)), shown_frame[1].get<std::string>()};
            break;
          }
        }
      } else {
        path.emplace_back(kNoStackFrame, "");
      }
      if (leaf_of[i].first.empty()) leaf_of[i] = path.back();
      std::size_t at = 0;
      nodes[0].sites.push_back(i);
      for (const auto& key : path) {
        auto child = nodes[at].children.find(key);
        if (child == nodes[at].children.end()) {
          child = nodes[at].children.emplace(key, nodes.size()).first;
          nodes.push_back(Node{key.first, key.second, 0, {}, {}});
        }
        at = child->second;
        nodes[at].bytes += s.bytes;
        nodes[at].sites.push_back(i);
      }
      end_node[i] = at;
    }
    ordered_json out = ordered_json::array();
    std::vector<uint64_t> shown_children_bytes;             // per emitted node
    using Entry = std::tuple<uint64_t, std::size_t, long>;  // bytes, node, parent's out index
    std::priority_queue<Entry> queue;
    queue.emplace(nodes[0].bytes, 0, -1);
    std::vector<std::size_t> emitted_nodes;
    std::vector<std::vector<std::size_t>> shown_children;  // per emitted node, nodes
    while (!queue.empty() && out.size() < limits_.flame_nodes) {
      const auto [bytes, n, parent] = queue.top();
      queue.pop();
      const long index = static_cast<long>(out.size());
      out.push_back(ordered_json::array({parent, bytes, nodes[n].label, nodes[n].where}));
      emitted_nodes.push_back(n);
      shown_children_bytes.push_back(0);
      shown_children.emplace_back();
      if (parent >= 0) {
        shown_children_bytes[static_cast<std::size_t>(parent)] += bytes;
        shown_children[static_cast<std::size_t>(parent)].push_back(n);
      }
      for (const auto& [key, child] : nodes[n].children)
        queue.emplace(nodes[child].bytes, child, index);
    }
    // Children never emitted: their sites grouped by allocating line, then by library.
    OwnerLibraryCache& owners = owners_of(t);
    const std::size_t emitted = out.size();
    std::size_t groups_left = limits_.flame_nodes;
    for (std::size_t i = 0; i < emitted; ++i) {
      const Node& node = nodes[emitted_nodes[i]];
      uint64_t children = 0;
      for (const auto& [key, child] : node.children) children += nodes[child].bytes;
      if (children <= shown_children_bytes[i]) continue;
      uint64_t hidden = children - shown_children_bytes[i];
      // The sites under the node that no shown child holds (a site ending at the node itself
      // is in no child, so in no group).
      std::vector<char> under_shown(peak_sites.size(), 0);
      for (std::size_t c : shown_children[i]) {
        for (uint32_t site : nodes[c].sites) under_shown[site] = 1;
      }
      std::map<std::pair<std::string, std::string>, uint64_t> by_line;
      std::map<std::string, uint64_t> by_library;
      const std::size_t depth_sites = node.sites.size();
      for (std::size_t k = 0; k < depth_sites; ++k) {
        const uint32_t site = node.sites[k];
        if (under_shown[site] || end_node[site] == emitted_nodes[i]) continue;
        by_line[leaf_of[site]] += peak_sites[site].bytes;
      }
      std::vector<std::pair<uint64_t, std::pair<std::string, std::string>>> lines;
      for (const auto& [key, bytes] : by_line) lines.emplace_back(bytes, key);
      std::sort(lines.begin(), lines.end(), std::greater<>());
      // A line is worth its own node when it holds a fiftieth of what is hidden here.
      for (const auto& [bytes, key] : lines) {
        if (groups_left == 0 || bytes * 50 < hidden) break;
        out.push_back(ordered_json::array(
            {static_cast<long>(i), bytes, "(stacks at) " + key.first, key.second}));
        --groups_left;
        hidden -= bytes;
        for (std::size_t k = 0; k < depth_sites; ++k) {
          const uint32_t site = node.sites[k];
          if (!under_shown[site] && leaf_of[site] == key) under_shown[site] = 2;
        }
      }
      if (hidden > 0 && !by_line.empty()) {
        for (std::size_t k = 0; k < depth_sites; ++k) {
          const uint32_t site = node.sites[k];
          if (under_shown[site] == 0 && end_node[site] != emitted_nodes[i]) {
            const PeakSite& ps = peak_sites[site];
            by_library[ps.cache ? allocator_cache_name(ps.allocator) : owners.of(ps.stack)] +=
                ps.bytes;
          }
        }
        std::vector<std::pair<uint64_t, std::string>> libraries;
        for (const auto& [name, bytes] : by_library) libraries.emplace_back(bytes, name);
        std::sort(libraries.begin(), libraries.end(), std::greater<>());
        for (const auto& [bytes, name] : libraries) {
          if (groups_left == 0 || bytes * 50 < hidden || libraries.size() == 1) break;
          out.push_back(
              ordered_json::array({static_cast<long>(i), bytes, "(stacks in) " + name, ""}));
          --groups_left;
          hidden -= bytes;
        }
      }
      if (hidden > 0) {
        out.push_back(ordered_json::array({static_cast<long>(i), hidden, "(smaller stacks)", ""}));
      }
    }
    return out;
  }

  ordered_json timeline(const LibraryTimeline& libraries, const ExportPass& pass,
                        int ordinal) const {
    ordered_json out = {{"resolution_ns", libraries.resolution_ns}};
    const auto it = libraries.devices.find(ordinal);
    ordered_json layers = ordered_json::array();
    if (it != libraries.devices.end()) {
      out["resident"] = it->second.resident;
      for (std::size_t i = 0; i < it->second.libraries.size(); ++i)
        layers.push_back({{"name", it->second.libraries[i]}, {"bytes", it->second.bytes[i]}});
    } else {
      out["resident"] = ordered_json::array();
    }
    out["libraries"] = layers;
    ordered_json roles = ordered_json::array();
    if (it != libraries.devices.end()) {
      for (const auto& [role, bytes] : it->second.roles)
        roles.push_back({{"name", role_name(role)}, {"bytes", bytes}});
    }
    out["roles"] = roles;
    ordered_json views = ordered_json::object();
    if (const auto v = pass.views.find(ordinal); v != pass.views.end()) {
      for (const char* name : kDrawnViews) {
        const auto series = v->second.find(name);
        if (series == v->second.end()) continue;
        ordered_json points = ordered_json::array();
        for (const auto& [bucket, value] : series->second)
          points.push_back(ordered_json::array({bucket, value}));
        views[name] = points;
      }
    }
    out["views"] = views;
    return out;
  }

  ordered_json trace(std::size_t index, TraceSummary& t, const ResolvedStacks& leak_frames,
                     uint64_t buckets) {
    stack_index_.clear();
    stacks_ = ordered_json::array();
    // What would make a failed run fit (the allocator's model), searched on a thread of its own
    // while the passes below read the trace.
    const bool failed = !t.failures.empty() || t.failures_not_kept > 0;
    auto remedies = failed && limits_.remedies ? start_remedies(t.path, std::nullopt)
                                               : std::async(std::launch::deferred, [] {
                                                   return std::optional<allocator::Remedies>();
                                                 });
    const uint64_t resolution = std::max<uint64_t>(1, t.duration_ns / buckets + 1);
    const LibraryTimeline libraries = read_library_timeline(t, resolution, limits_.libraries);
    const ExportPass pass = read_export_pass(t, resolution);
    const AllocationPass allocations =
        read_allocation_pass(t, resolution, t.duration_ns / resolution + 1, limits_.allocations);
    std::vector<uint32_t> stacks = shown_stacks(t);
    for (const AllocationSite& site : allocations.sites) stacks.push_back(site.stack);
    const ResolvedStacks resolved = resolve_stacks(t, stacks, t.symbolization_warnings);

    const ordered_json devices = devices_json(t, resolved, libraries, pass, allocations);
    const ordered_json ooms = ooms_json(t, resolved, leak_frames);
    const ordered_json leaks = leaks_json(t, leak_frames);
    const ordered_json runs = phase_runs_json(pass);
    const std::size_t runs_left_out = pass.phases.size() - runs.size() + pass.phases_not_kept;
    ordered_json argv = ordered_json::array();
    for (const std::string& arg : t.argv) argv.push_back(text(arg));
    ordered_json fixes = nullptr;
    if (const auto found = remedies.get()) {
      ordered_json answer = ordered_json::object();
      add_remedies_json(*found, answer);
      // Nothing is said of remedies where the model does not apply (no PyTorch block events).
      if (!answer.empty()) fixes = std::move(answer);
    }
    ordered_json warnings = ordered_json::array();
    for (std::size_t i = 0; i < t.symbolization_warnings.size() && i < 20; ++i)
      warnings.push_back(text(t.symbolization_warnings[i]));
    return {{"index", index},
            {"path", t.path},
            {"pid", t.pid},
            {"ppid", t.ppid},
            {"host", t.host},
            {"rank", rank_json(t)},
            {"argv", argv},
            {"duration_ns", t.duration_ns},
            {"events", t.events},
            {"end", end_name(t.end)},
            {"end_reason", t.end_reason},
            {"notes", notes_and_hidden_pools(t)},
            {"history", history_json(t)},
            {"history_text", text(history_text(t))},
            {"symbolization_warnings", warnings},
            {"devices", devices},
            {"ooms", ooms},
            {"ooms_left_out", t.failures.size() - ooms.size() + t.failures_not_kept},
            {"leaks", leaks},
            {"leaks_left_out", t.leaks.size() - leaks.size()},
            {"allocation_sites", allocation_sites_json(t, resolved, allocations)},
            {"step_runs", step_runs_json(allocations)},
            {"allocation_modules", modules_json(allocations)},
            {"remedies", fixes},
            {"phases", phase_stats_json(t)},
            {"phase_runs", runs},
            {"phase_runs_left_out", runs_left_out},
            {"stacks", stacks_}};
  }

 private:
  // Every stack the page symbolizes: the peak's (all of them, for the flame graph) and the
  // holders of each failed allocation shown.
  std::vector<uint32_t> shown_stacks(const TraceSummary& t) const {
    std::vector<uint32_t> ids;
    for (const auto& [ordinal, d] : t.devices) {
      for (const PeakSite& s : d.shown_peak_sites()) ids.push_back(s.stack);
    }
    for (std::size_t i = 0; i < t.failures.size() && i < limits_.ooms; ++i) {
      for (std::size_t h = 0; h < t.failures[i].holders.size() && h < limits_.holders; ++h)
        ids.push_back(t.failures[i].holders[h].stack);
    }
    return ids;
  }

  // "views at the peak (sampled 2 ms after it)": how far the sample is from the peak it stands
  // for.
  static std::string views_at_peak_title(const DeviceSummary& d) {
    if (!d.views_at_peak) return "views at the peak";
    const bool after = d.views_at_peak->time_ns >= d.peak_time_ns;
    return "views at the peak (sampled " +
           human_duration(after ? d.views_at_peak->time_ns - d.peak_time_ns
                                : d.peak_time_ns - d.views_at_peak->time_ns) +
           (after ? " after it)" : " before it)");
  }

  ordered_json devices_json(const TraceSummary& t, const ResolvedStacks& resolved,
                            const LibraryTimeline& libraries, const ExportPass& pass,
                            const AllocationPass& allocations) {
    ordered_json devices = ordered_json::array();
    for (const auto& [ordinal, d] : t.devices) {
      if (!shown(ordinal, d)) continue;
      ordered_json sites = ordered_json::array();
      const std::vector<PeakSite>& peak_sites = d.shown_peak_sites();
      for (std::size_t i = 0; i < peak_sites.size() && i < limits_.peak_sites; ++i)
        sites.push_back(site(t, resolved, peak_sites[i]));
      ordered_json device = {{"device", ordinal},
                             {"name", d.identity.name},
                             {"pci_bus_id", d.identity.pci_bus_id},
                             {"peak_bytes", d.peak_bytes},
                             {"peak_time_ns", d.peak_time_ns},
                             {"peak_phase", d.peak_phase}};
      device.update(device_counts_json(d));
      const std::size_t sites_left_out = peak_sites.size() - sites.size();
      device.update(
          {{"timeline", timeline(libraries, pass, ordinal)},
           {"peak_sites", std::move(sites)},
           {"peak_sites_left_out", sites_left_out},
           {"flame", flame(t, ordinal, d, resolved)},
           {"allocations", allocations_json(allocations, ordinal)},
           {"views_at_peak_title", views_at_peak_title(d)},
           {"views_at_peak", views_json(d.views_at_peak, d.peak_bytes, by_library_at_peak(t, d))},
           {"roles_at_peak", t.roles_recorded && d.roles_at_peak
                                 ? roles_json(*d.roles_at_peak, limits_.modules)
                                 : nullptr}});
      if (const auto inference = device_inference(d)) {
        device["inference"] = inference_json(*inference);
        device["inference"]["at_exit"] = d.roles_at_exit && d.roles_at_exit->kv_cache.has_value();
      }
      devices.push_back(std::move(device));
    }
    return devices;
  }

  // The allocation view's sites: the stack, owning library and the user's line of each.
  ordered_json allocation_sites_json(const TraceSummary& t, const ResolvedStacks& resolved,
                                     const AllocationPass& pass) {
    OwnerLibraryCache& owners = owners_of(t);
    ordered_json sites = ordered_json::array();
    for (std::size_t i = 0; i < pass.sites.size(); ++i) {
      const AllocationSite& s = pass.sites[i];
      if (i == AllocationPass::kOtherSite) {
        sites.push_back({{"stack", nullptr}, {"library", "other"}, {"line", "(other sites)"}});
        continue;
      }
      ordered_json site = stack(resolved, s.stack);
      site["library"] = owners.of(s.stack);
      site["line"] = user_line(resolved, s.stack);
      if (s.allocator >= 0) site["allocator"] = allocator_name(s.allocator);
      sites.push_back(std::move(site));
    }
    return sites;
  }

  // The modules the allocation view's bands name (index 0: none).
  ordered_json modules_json(const AllocationPass& pass) const {
    ordered_json names = ordered_json::array();
    for (const std::string& name : pass.modules) names.push_back(text(name));
    return names;
  }

  // The optimizer steps and root forwards the framework's hooks reported.
  ordered_json step_runs_json(const AllocationPass& pass) const {
    ordered_json runs = ordered_json::array();
    for (const StepRun& r : pass.steps)
      runs.push_back({{"name", text(r.name)}, {"start_ns", r.start_ns}, {"end_ns", r.end_ns}});
    return runs;
  }

  // "file:line" of the first frame the page shows of a stack (the user's), else its function.
  std::string user_line(const ResolvedStacks& resolved, uint32_t id) const {
    const auto it = resolved.find(id);
    if (it == resolved.end()) return kNoStackFrame;
    const ShownStack shown = shown_stack(it->second, limits_.frame_mode);
    if (shown.frames.empty()) return kNoStackFrame;
    const ordered_json f = frame(shown.frames.front());
    const std::string where = f[1].get<std::string>();
    return where.empty() || where.front() == '(' ? f[0].get<std::string>() : where;
  }

  // A series per bucket as bucket, value, bucket, value... where its value changes (from 0):
  // most buckets of a site's series repeat the one before.
  static ordered_json changes(const std::vector<uint64_t>& values) {
    ordered_json out = ordered_json::array();
    uint64_t before = 0;
    for (std::size_t b = 0; b < values.size(); ++b) {
      if (values[b] == before) continue;
      out.push_back(b);
      out.push_back(values[b]);
      before = values[b];
    }
    return out;
  }

  // One device's allocations: the large ones whole, in columns (start, end: -1 when live at
  // the end, size, site, role), the small ones as series per site, the allocators' cache, and
  // the segments at the peak, at failures and at evenly spaced moments.
  static ordered_json allocations_json(const AllocationPass& pass, int ordinal) {
    const auto it = pass.devices.find(ordinal);
    if (it == pass.devices.end()) return nullptr;
    const DeviceAllocations& d = it->second;
    ordered_json start = ordered_json::array(), end = ordered_json::array(),
                 size = ordered_json::array(), site = ordered_json::array(),
                 role = ordered_json::array(), module = ordered_json::array(),
                 address = ordered_json::array();
    for (const AllocationBand& b : d.bands) {
      start.push_back(b.start_ns);
      if (b.end_ns == AllocationBand::kLive) {
        end.push_back(-1);
      } else {
        end.push_back(b.end_ns);
      }
      size.push_back(b.size);
      address.push_back(b.address);
      site.push_back(b.site);
      role.push_back(static_cast<int>(b.role));
      module.push_back(b.module);
    }
    ordered_json span_start = ordered_json::array(), span_end = ordered_json::array(),
                 span_size = ordered_json::array(), span_address = ordered_json::array(),
                 span_allocator = ordered_json::array(), span_expandable = ordered_json::array(),
                 span_graph_pool = ordered_json::array();
    if (d.segment_spans_complete) {
      for (const auto& [from, to, bytes, address, allocator, expandable, graph_pool] :
           d.segment_spans) {
        span_start.push_back(from);
        if (to == AllocationBand::kLive) {
          span_end.push_back(-1);
        } else {
          span_end.push_back(to);
        }
        span_size.push_back(bytes);
        span_address.push_back(address);
        span_allocator.push_back(allocator_name(static_cast<int>(allocator)));
        span_expandable.push_back(expandable != 0);
        span_graph_pool.push_back(graph_pool != 0);
      }
    }
    const ordered_json segment_spans = d.segment_spans_complete
                                           ? ordered_json{{"start", span_start},
                                                          {"end", span_end},
                                                          {"size", span_size},
                                                          {"address", span_address},
                                                          {"allocator", span_allocator},
                                                          {"expandable", span_expandable},
                                                          {"graph_pool", span_graph_pool}}
                                           : ordered_json(nullptr);
    ordered_json roles = ordered_json::array();
    for (std::size_t r = 0; r < kRoleCount; ++r) roles.push_back(role_name(static_cast<Role>(r)));
    ordered_json series = ordered_json::array();
    for (std::size_t i = 0; i < d.series.size(); ++i) {
      series.push_back({{"site", d.series[i].first},
                        {"role", role_name(d.series_roles[i])},
                        {"blocks", static_cast<bool>(d.series_blocks[i])},
                        {"changes", changes(d.series[i].second)}});
    }
    ordered_json snapshots = ordered_json::array();
    for (const SegmentSnapshot& s : d.snapshots) {
      ordered_json segments = ordered_json::array();
      for (const SegmentState& seg : s.segments) {
        ordered_json pieces = ordered_json::array();
        for (const SegmentPiece& p : seg.pieces) {
          if (p.free) {
            pieces.push_back(ordered_json::array({p.offset, p.size}));
          } else {
            pieces.push_back(ordered_json::array({p.offset, p.size, p.site, role_name(p.role)}));
          }
        }
        segments.push_back({{"address", seg.address},
                            {"size", seg.size},
                            {"allocator", allocator_name(seg.allocator)},
                            {"expandable", seg.expandable},
                            {"graph_pool", seg.graph_pool},
                            {"pieces", std::move(pieces)}});
      }
      snapshots.push_back({{"kind", s.kind},
                           {"time_ns", s.time_ns},
                           {"request_bytes", s.request_bytes},
                           {"free_bytes", s.free_bytes},
                           {"largest_free_bytes", s.largest_free_bytes},
                           {"segments_left_out", s.segments_left_out},
                           {"pieces_left_out", s.pieces_left_out},
                           {"segments", std::move(segments)}});
    }
    return {{"first_alloc_ns", d.first_alloc_ns},
            {"threshold_bytes", pass.threshold_bytes},
            {"kept", d.bands.size()},
            {"small_count", d.small_count},
            {"roles", roles},
            {"bands",
             {{"start", start},
              {"end", end},
              {"size", size},
              {"site", site},
              {"role", role},
              {"module", module},
              {"address", address}}},
            {"blocks_whole", d.blocks_whole},
            {"series", series},
            {"moments", d.moments},
            {"segment_spans", segment_spans},
            {"cache", d.cache.empty() ? ordered_json(nullptr) : changes(d.cache)},
            {"snapshots", snapshots}};
  }

  ordered_json ooms_json(const TraceSummary& t, const ResolvedStacks& resolved,
                         const ResolvedStacks& leak_frames) {
    ordered_json ooms = ordered_json::array();
    for (std::size_t i = 0; i < t.failures.size() && i < limits_.ooms; ++i) {
      const FailedAllocation& f = t.failures[i];
      ordered_json holders = ordered_json::array();
      for (std::size_t h = 0; h < f.holders.size() && h < limits_.holders; ++h)
        holders.push_back(site(t, resolved, f.holders[h]));
      ordered_json oom = {{"time_ns", f.time_ns},
                          {"device", f.device},
                          {"api", std::string(format::api_name(f.api))},
                          {"kind", std::string(format::memory_kind_name(f.kind))},
                          {"requested_bytes", f.requested_bytes},
                          {"live_bytes", f.live_bytes},
                          {"error", f.error},
                          {"error_name", cuda_error_name(f.error)}};
      oom.update(stack(leak_frames, f.stack));
      oom["holders"] = holders;
      if (f.allocator >= 0) {
        oom["allocator"] = allocator_name(f.allocator);
        oom["allocator_requested_bytes"] = f.allocator_requested_bytes;
        oom["cache_free_bytes"] = f.cache_free_bytes;
        oom["largest_free_block_bytes"] = f.largest_free_block_bytes;
        oom["fragmentation"] = f.fragmented;
      }
      ooms.push_back(std::move(oom));
    }
    return ooms;
  }

  ordered_json leaks_json(const TraceSummary& t, const ResolvedStacks& leak_frames) {
    ordered_json leaks = ordered_json::array();
    OwnerLibraryCache& owners = owners_of(t);
    for (std::size_t i = 0; i < t.leaks.size() && i < limits_.leaks; ++i) {
      const LeakGroup& g = t.leaks[i];
      ordered_json leak = {{"class", leak_class_name(g.leak_class)},
                           {"device", g.device},
                           {"bytes", g.bytes},
                           {"resident_bytes", g.resident_bytes},
                           {"count", g.count},
                           {"growth_bytes_per_s", g.growth_bytes_per_s},
                           {"freed_at_exit", g.freed_at_exit},
                           {"library", owners.of(g.stack)}};
      leak.update(stack(leak_frames, g.stack));
      if (g.allocator >= 0) {
        // What the allocator holds free has no stack: the row is named for it.
        const bool cache = g.stack == 0 && g.leak_class == LeakClass::kCached;
        if (cache) leak["library"] = allocator_cache_name(g.allocator);
        leak["allocator"] = allocator_name(g.allocator);
        leak["level"] = cache ? "cache" : "block";
      }
      leaks.push_back(std::move(leak));
    }
    return leaks;
  }

  ordered_json phase_runs_json(const ExportPass& pass) const {
    ordered_json runs = ordered_json::array();
    for (std::size_t i = 0; i < pass.phases.size() && i < limits_.phase_runs; ++i) {
      const PhaseRun& p = pass.phases[i];
      runs.push_back({{"name", text(p.name)},
                      {"thread", p.thread},
                      {"start_ns", p.start_ns},
                      {"end_ns", p.end_ns},
                      {"ended", p.ended}});
    }
    return runs;
  }

  ordered_json phase_stats_json(const TraceSummary& t) const {
    ordered_json phase_stats = ordered_json::array();
    for (const PhaseStats& p : t.phases) {
      phase_stats.push_back({{"name", text(p.name)},
                             {"device", p.device},
                             {"calls", p.calls},
                             {"peak_bytes", p.peak_bytes},
                             {"growth_bytes", p.growth_bytes}});
    }
    return phase_stats;
  }

  OwnerLibraryCache& owners_of(const TraceSummary& trace) {
    auto it = owners_.find(&trace);
    if (it == owners_.end()) it = owners_.emplace(&trace, OwnerLibraryCache(trace)).first;
    return it->second;
  }

  const HtmlLimits& limits_;
  std::map<const TraceSummary*, OwnerLibraryCache> owners_;
  // The stacks the trace being built names, by StackRecord id.
  std::unordered_map<uint32_t, std::size_t> stack_index_;
  ordered_json stacks_;
};

// One row per process and device, the highest peak marked: for a run of several processes.
ordered_json process_rows(const std::vector<TraceSummary>& traces, std::size_t limit) {
  const DeviceSummary* highest = nullptr;
  for (const TraceSummary& t : traces) {
    for (const auto& [ordinal, d] : t.devices) {
      if (highest == nullptr || d.peak_bytes > highest->peak_bytes) highest = &d;
    }
  }
  ordered_json rows = ordered_json::array();
  for (std::size_t i = 0; i < traces.size() && rows.size() < limit; ++i) {
    const TraceSummary& t = traces[i];
    for (const auto& [ordinal, d] : t.devices) {
      if (!shown(ordinal, d) || rows.size() >= limit) continue;
      rows.push_back({{"trace", i},
                      {"pid", t.pid},
                      {"rank", rank_json(t)},
                      {"device", ordinal},
                      {"peak_bytes", d.peak_bytes},
                      {"leaked_bytes", leaked_on(t, ordinal)},
                      {"ooms", d.failed_alloc_count},
                      {"highest", &d == highest}});
    }
  }
  return rows;
}

}  // namespace

ordered_json html_report_data(ReportInput& input, const HtmlLimits& limits, unsigned jobs) {
  uint64_t device_count = 0;
  for (const TraceSummary& t : input.traces) {
    for (const auto& [ordinal, d] : t.devices) device_count += shown(ordinal, d) ? 1 : 0;
  }
  const uint64_t buckets =
      std::clamp<uint64_t>(limits.buckets_in_all / std::max<uint64_t>(device_count, 1),
                           limits.min_buckets, limits.buckets_per_device);
  // Each trace's part by a worker of its own (a builder per trace: its table of stacks and its
  // owners are the trace's), put in place by index: the page is the same whatever the number.
  // The allocation view shares its bounds among the traces of a page (a job of a thousand
  // processes gets a few hundred whole allocations each, and fewer moments).
  HtmlLimits shared = limits;
  const std::size_t trace_count = std::max<std::size_t>(input.traces.size(), 1);
  AllocationLimits& a = shared.allocations;
  a.bands =
      std::min(a.bands, std::max<std::size_t>(limits.allocation_bands_in_all / trace_count, 200));
  // Remedies cost a few replays of each failed trace: searched for a page of a few traces.
  shared.remedies = limits.remedies && trace_count <= 8;
  if (trace_count > 8) {
    a.moments = std::min<std::size_t>(a.moments, 2);
    a.series = std::min<std::size_t>(a.series, 8);
    a.failures = std::min<std::size_t>(a.failures, 4);
    a.segment_spans = std::min<std::size_t>(a.segment_spans, 2000);
  }
  std::vector<ordered_json> parts(input.traces.size());
  for_each_index(input.traces.size(), worker_count(jobs), [&](std::size_t i) {
    DataBuilder builder(shared);
    parts[i] = builder.trace(i, input.traces[i], input.frames[i], buckets);
  });
  ordered_json traces = ordered_json::array();
  for (ordered_json& part : parts) traces.push_back(std::move(part));
  parts.clear();
  ordered_json unreadable = ordered_json::array();
  for (const UnreadableTrace& u : input.unreadable)
    unreadable.push_back({{"path", u.path}, {"error", u.error}});
  return {{"generator", "gpumemtrace html"},
          {"limits",
           {{"buckets_per_device", buckets},
            {"libraries", limits.libraries},
            {"flame_nodes", limits.flame_nodes},
            {"peak_sites", limits.peak_sites},
            {"modules", limits.modules},
            {"ooms", limits.ooms},
            {"leaks", limits.leaks},
            {"phase_runs", limits.phase_runs}}},
          {"traces", traces},
          {"processes", input.traces.size() > 1 ? process_rows(input.traces, limits.process_rows)
                                                : ordered_json::array()},
          {"job", input.traces.size() > 1 ? job_json(input) : ordered_json(nullptr)},
          {"unreadable", unreadable}};
}

}  // namespace gmt::analyzer
