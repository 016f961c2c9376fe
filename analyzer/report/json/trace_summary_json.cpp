// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/json/trace_summary_json.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <type_traits>

#include "analyzer/model/hidden_pool.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/model/leak_classes.h"
#include "analyzer/report/hidden_pool_note.h"
#include "analyzer/report/history_text.h"
#include "analyzer/report/json/json_fields.h"
#include "analyzer/report/report.h"
#include "analyzer/report/roles_report.h"
#include "analyzer/report/trace_end_text.h"

namespace gmt::analyzer {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// Modules kept per device and moment, and per failed allocation: enough for the tables every
// presentation shows (report shows 5 per device, peak 10), bounded whatever the model's size.
constexpr std::size_t kSummaryModules = 100;
constexpr std::size_t kSummaryFailureModules = 10;

// The summary's table of stacks: each distinct list of frames once, named by its index.
class StackTable {
 public:
  // The index of `frames` in the table (added if new).
  std::size_t index(const std::vector<SiteFrame>& frames) {
    ordered_json entry = ordered_json::array();
    for (const SiteFrame& f : frames) {
      entry.push_back({{"function", f.function},
                       {"file", f.file ? ordered_json(*f.file) : nullptr},
                       {"line", f.line ? ordered_json(*f.line) : nullptr},
                       {"module", f.module ? ordered_json(*f.module) : nullptr},
                       {"kind", f.kind}});
    }
    const auto [at, added] = index_.try_emplace(entry.dump(), table_.size());
    if (added) table_.push_back(std::move(entry));
    return at->second;
  }

  // A recorded stack's index, or null for stack 0 (an allocation recorded without a stack).
  ordered_json stack(const ResolvedStacks& frames, uint32_t id) {
    if (id == 0) return nullptr;
    const auto found = frames.find(id);
    return index(found != frames.end() ? found->second : std::vector<SiteFrame>{});
  }

  ordered_json take() { return std::move(table_); }

 private:
  std::map<std::string, std::size_t> index_;
  ordered_json table_ = ordered_json::array();
};

ordered_json kv_cache_length_json(const KvCacheLength& l) {
  return {{"batch", l.batch},       {"tokens", l.tokens},
          {"capacity", l.capacity}, {"bytes_per_token", l.bytes_per_token},
          {"layers", l.layers},     {"growing_since_ns", l.growing_since_ns}};
}

// A device's bytes by role and module at a moment, as a summary keeps it: the roles that hold
// bytes, and the first `modules` modules (the rest counted).
ordered_json role_breakdown_json(const std::optional<RoleBreakdown>& roles, std::size_t modules) {
  if (!roles) return nullptr;
  ordered_json rows = ordered_json::array();
  for (std::size_t i = 0; i < kRoleCount; ++i) {
    const RoleFigure& f = roles->roles[i];
    if (f.bytes == 0 && f.count == 0) continue;
    rows.push_back({{"role", role_name(static_cast<Role>(i))},
                    {"bytes", f.bytes},
                    {"count", f.count},
                    {"tagged_bytes", f.tagged_bytes},
                    {"running_bytes", f.running_bytes}});
  }
  ordered_json listed = ordered_json::array();
  for (std::size_t m = 0; m < roles->modules.size() && m < modules; ++m)
    listed.push_back({{"module", roles->modules[m].module},
                      {"by_role", role_bytes_json(roles->modules[m].bytes)}});
  ordered_json out = {
      {"time_ns", roles->time_ns},
      {"at_program_end", roles->at_program_end},
      {"roles", rows},
      {"modules", listed},
      {"modules_not_listed", roles->modules.size() - std::min(roles->modules.size(), modules)}};
  if (roles->kv_cache) out["kv_cache_length"] = kv_cache_length_json(*roles->kv_cache);
  // Summary 1.3: what tokens that fit are worked out from (inference_report.h).
  out["step_bytes"] = roles->step_bytes ? ordered_json(*roles->step_bytes) : nullptr;
  out["in_decode_step"] = roles->in_decode_step;
  return out;
}

// A moment's views, as the sampler read them (null fields: not read).
ordered_json views_json(const std::optional<ViewValues>& views) {
  if (!views) return nullptr;
  const auto value = [](const std::optional<uint64_t>& v) {
    return v ? ordered_json(*v) : ordered_json(nullptr);
  };
  const ViewValues& v = *views;
  return {{"time_ns", v.time_ns},
          {"exact", v.exact},
          {"tracked_bytes", v.tracked_bytes},
          {"nvml_process_bytes", value(v.nvml_process_bytes)},
          {"nvml_device_used_bytes", value(v.nvml_device_used_bytes)},
          {"nvml_device_total_bytes", value(v.nvml_device_total_bytes)},
          {"nvml_other_processes_bytes", value(v.nvml_other_processes_bytes)},
          {"driver_used_bytes", value(v.driver_used_bytes)},
          {"driver_total_bytes", value(v.driver_total_bytes)},
          {"pool_reserved_bytes", value(v.pool_reserved_bytes)},
          {"pool_used_bytes", value(v.pool_used_bytes)},
          {"graph_reserved_bytes", value(v.graph_reserved_bytes)},
          {"graph_used_bytes", value(v.graph_used_bytes)},
          {"framework_allocated_bytes", value(v.framework_allocated_bytes)},
          {"framework_reserved_bytes", value(v.framework_reserved_bytes)},
          {"framework_time_ns", value(v.framework_time_ns)},
          {"framework_tracked_bytes", value(v.framework_tracked_bytes)}};
}

// The allocator's model of a decode loop run on (allocator/decode_ahead.h), or null.
ordered_json decode_ahead_json(const std::optional<allocator::DecodeAhead>& ahead) {
  if (!ahead) return nullptr;
  const allocator::DecodeAhead& a = *ahead;
  return {{"steps", a.steps},
          {"tokens_per_step", a.tokens_per_step},
          {"requests_per_step", a.requests_per_step},
          {"capacity", a.capacity},
          {"reserved", a.reserved},
          {"kept_free", a.kept_free},
          {"steps_that_fit", a.steps_that_fit},
          {"tokens_that_fit", a.tokens_that_fit},
          {"failed_size", a.failed_size ? ordered_json(*a.failed_size) : nullptr}};
}

ordered_json decode_ran_out_json(const std::vector<DeviceSummary::DecodeRanOut>& ran_out) {
  ordered_json rows = ordered_json::array();
  for (const DeviceSummary::DecodeRanOut& r : ran_out)
    rows.push_back({{"cache", kv_cache_length_json(r.cache)}, {"request_bytes", r.request_bytes}});
  return rows;
}

// The roles of a listed leak group's blocks at exit (what `leaks` names the group's role by).
ordered_json leak_roles_json(const TraceSummary& t, const LeakGroup& g) {
  const auto d = t.devices.find(g.device);
  if (g.allocator < 0 || d == t.devices.end() || !d->second.roles_at_exit) return nullptr;
  for (const RoleBreakdown::StackRoles& s : d->second.roles_at_exit->block_stacks) {
    if (s.stack == g.stack) return role_bytes_json(s.bytes);
  }
  return nullptr;
}

// XLA's pool, where the trace shows one (hidden_pool.h), as `report --json` gives it: null
// otherwise.
ordered_json hidden_pool_of(const TraceSummary& t, const DeviceSummary& d) {
  const std::optional<HiddenPool> pool = hidden_pool(t, d);
  return pool ? hidden_pool_json(*pool, d.device) : ordered_json(nullptr);
}

ordered_json devices_json(const TraceSummary& t, StackTable& stacks) {
  ordered_json devices = ordered_json::array();
  for (const auto& [ordinal, d] : t.devices) {
    ordered_json sites = ordered_json::array();
    for (const ResolvedSite& s : d.top_sites) {
      sites.push_back({{"bytes", s.bytes},
                       {"count", s.count},
                       {"allocator", s.allocator},
                       {"cache", s.cache},
                       {"graph", s.graph},
                       {"stack", stacks.index(s.frames)},
                       {"roles", role_bytes_json(s.roles)}});
    }
    devices.push_back({{"device", ordinal},
                       {"name", d.identity.name},
                       {"pci_bus_id", d.identity.pci_bus_id},
                       {"peak_bytes", d.peak_bytes},
                       {"peak_time_ns", d.peak_time_ns},
                       {"peak_phase", d.peak_phase},
                       {"live_bytes", d.live_bytes},
                       {"live_count", d.live_count},
                       {"alloc_count", d.alloc_count},
                       {"free_count", d.free_count},
                       {"teardown_free_count", d.teardown_free_count},
                       {"failed_alloc_count", d.failed_alloc_count},
                       {"peak_sites", sites},
                       {"roles_at_peak", role_breakdown_json(d.roles_at_peak, kSummaryModules)},
                       {"roles_at_exit", role_breakdown_json(d.roles_at_exit, kSummaryModules)},
                       {"hidden_pool", hidden_pool_of(t, d)},
                       {"views_at_peak", views_json(d.views_at_peak)},
                       {"views_at_exit", views_json(d.views_at_exit)},
                       {"decode_ahead", decode_ahead_json(d.decode_ahead)},
                       {"decode_ahead_why_not", d.decode_ahead_why_not},
                       {"decode_ran_out", decode_ran_out_json(d.decode_ran_out)}});
  }
  return devices;
}

// The listed leak groups with their stacks, and the rest summed by device and class: every
// byte never freed is still counted (check's --max-leak, the leaks column).
void add_leaks(const TraceSummary& t, const ResolvedStacks& frames, StackTable& stacks,
               ordered_json& out) {
  ordered_json leaks = ordered_json::array();
  std::map<std::pair<int, LeakClass>, LeakGroup> rest;
  std::map<std::pair<int, LeakClass>, uint64_t> rest_groups;
  for (std::size_t i = 0; i < t.leaks.size(); ++i) {
    const LeakGroup& g = t.leaks[i];
    if (i >= kReportLeakGroups) {
      LeakGroup& sum = rest[{g.device, g.leak_class}];
      sum.bytes += g.bytes;
      sum.resident_bytes += g.resident_bytes;
      sum.count += g.count;
      ++rest_groups[{g.device, g.leak_class}];
      continue;
    }
    leaks.push_back({{"device", g.device},
                     {"class", leak_class_name(g.leak_class)},
                     {"bytes", g.bytes},
                     {"resident_bytes", g.resident_bytes},
                     {"count", g.count},
                     {"growth_bytes_per_s", g.growth_bytes_per_s},
                     {"freed_at_exit", g.freed_at_exit},
                     {"allocator", g.allocator},
                     {"stack", stacks.stack(frames, g.stack)},
                     {"roles", leak_roles_json(t, g)}});
  }
  ordered_json not_listed = ordered_json::array();
  for (const auto& [key, g] : rest) {
    not_listed.push_back({{"device", key.first},
                          {"class", leak_class_name(key.second)},
                          {"groups", rest_groups[key]},
                          {"bytes", g.bytes},
                          {"resident_bytes", g.resident_bytes},
                          {"count", g.count}});
  }
  out["leaks"] = leaks;
  out["leaks_not_listed"] = not_listed;
}

ordered_json failures_json(const TraceSummary& t, const ResolvedStacks& frames,
                           StackTable& stacks) {
  ordered_json failures = ordered_json::array();
  for (const FailedAllocation& f : t.failures) {
    failures.push_back({{"time_ns", f.time_ns},
                        {"device", f.device},
                        {"kind", format::memory_kind_name(f.kind)},
                        {"api", format::api_name(f.api)},
                        {"driver_api", format::api_name(f.driver_api)},
                        {"requested_bytes", f.requested_bytes},
                        {"error", f.error},
                        {"live_bytes", f.live_bytes},
                        {"allocator", f.allocator},
                        {"allocator_requested_bytes", f.allocator_requested_bytes},
                        {"cache_free_bytes", f.cache_free_bytes},
                        {"largest_free_block_bytes", f.largest_free_block_bytes},
                        {"fragmented", f.fragmented},
                        {"views", views_json(f.views)},
                        {"retries", retries_json(f.retries)},
                        {"stack", stacks.stack(frames, f.stack)},
                        {"roles", role_breakdown_json(f.roles, kSummaryFailureModules)}});
  }
  return failures;
}

// Reading: each field looked up by name, with the file named in every error.
class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& why) const {
    throw TraceError(path_ + ": not a readable gpumemtrace summary: " + why);
  }

  const json& at(const json& object, const char* key) const {
    if (!object.is_object()) fail(std::string("expected an object holding \"") + key + "\"");
    const auto it = object.find(key);
    if (it == object.end()) fail(std::string("no \"") + key + "\" field");
    return *it;
  }

  template <class T>
  T get(const json& object, const char* key) const {
    const json& value = at(object, key);
    // nlohmann converts any number to any arithmetic type, silently: -5 would read as 16 EiB,
    // 1e300 as 0, a device of 2^40 as device 0. A damaged summary is said to be damaged.
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const bool fits =
          std::is_unsigned_v<T>
              ? value.is_number_unsigned() &&
                    value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
              : value.is_number_integer() &&
                    (value.is_number_unsigned()
                         ? value.get<uint64_t>() <=
                               static_cast<uint64_t>(std::numeric_limits<T>::max())
                         : value.get<int64_t>() >= std::numeric_limits<T>::min() &&
                               value.get<int64_t>() <= std::numeric_limits<T>::max());
      if (!fits) {
        fail(std::string("\"") + key + "\": expected a whole number from " +
             std::to_string(std::numeric_limits<T>::min()) + " to " +
             std::to_string(std::numeric_limits<T>::max()) + ", got " + value.dump());
      }
    }
    try {
      return value.get<T>();
    } catch (const json::exception& e) {
      fail(std::string("\"") + key + "\": " + e.what());
    }
  }

  std::optional<std::string> optional_string(const json& object, const char* key) const {
    const json& v = at(object, key);
    return v.is_null() ? std::nullopt : std::optional<std::string>(get<std::string>(object, key));
  }

  LeakClass leak_class(const json& object) const {
    const std::string name = get<std::string>(object, "class");
    // Every class by its value, in order: leak_class_name names each (and values past the last
    // class as the last, which the first match has already passed).
    for (int value = 0; value < 64; ++value) {
      const auto c = static_cast<LeakClass>(value);
      if (name == leak_class_name(c)) return c;
    }
    fail("unknown leak class \"" + name + "\"");
  }

  format::MemoryKind kind(const json& object) const {
    const std::string name = get<std::string>(object, "kind");
    for (uint8_t k = 0; k < format::kMemoryKindCount; ++k) {
      const auto kind = static_cast<format::MemoryKind>(k);
      if (format::memory_kind_name(kind) == name) return kind;
    }
    fail("unknown memory kind \"" + name + "\"");
  }

  format::Api api(const json& object, const char* key) const {
    const std::string name = get<std::string>(object, key);
    for (uint16_t a = 0; a < static_cast<uint16_t>(format::Api::kCount); ++a) {
      const auto api = static_cast<format::Api>(a);
      if (format::api_name(api) == name) return api;
    }
    fail(std::string("unknown API \"") + name + "\"");
  }

  std::vector<SiteFrame> frames(const json& entry) const {
    if (!entry.is_array()) fail("a stack is not an array of frames");
    std::vector<SiteFrame> out;
    for (const json& f : entry) {
      SiteFrame frame;
      frame.function = get<std::string>(f, "function");
      frame.file = optional_string(f, "file");
      if (!at(f, "line").is_null()) frame.line = get<int>(f, "line");
      frame.module = optional_string(f, "module");
      frame.kind = get<std::string>(f, "kind");
      out.push_back(std::move(frame));
    }
    return out;
  }

  Role role(const std::string& name) const {
    const std::optional<Role> role = role_of_name(name);
    if (!role) fail("unknown role \"" + name + "\"");
    return *role;
  }

  // {role: bytes}, as role_bytes_json() wrote it.
  std::array<uint64_t, kRoleCount> role_bytes(const json& object) const {
    if (!object.is_object()) fail("a role split is not an object of roles");
    std::array<uint64_t, kRoleCount> bytes{};
    for (const auto& [name, value] : object.items()) {
      if (!value.is_number_unsigned()) fail("role \"" + name + "\" has no byte count");
      bytes[static_cast<std::size_t>(role(name))] = value.get<uint64_t>();
    }
    return bytes;
  }

  // A moment's roles (summary 1.2), none where the summary has none: null, or a summary written
  // before roles were kept.
  std::optional<RoleBreakdown> roles(const json& object, const char* key) const {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return std::nullopt;
    RoleBreakdown out;
    out.time_ns = get<uint64_t>(*it, "time_ns");
    out.at_program_end = get<bool>(*it, "at_program_end");
    for (const json& row : at(*it, "roles")) {
      RoleFigure& f = out[role(get<std::string>(row, "role"))];
      f.bytes = get<uint64_t>(row, "bytes");
      f.count = get<uint64_t>(row, "count");
      f.tagged_bytes = get<uint64_t>(row, "tagged_bytes");
      if (f.tagged_bytes > f.bytes) fail("a role has more tagged bytes than bytes");
      // Summaries written before the running work placed any block have none.
      if (row.contains("running_bytes")) f.running_bytes = get<uint64_t>(row, "running_bytes");
      if (f.running_bytes > f.bytes - f.tagged_bytes) {
        fail("a role has more running bytes than untagged bytes");
      }
    }
    // Summaries written before inference's figures have none.
    if (const auto length = it->find("kv_cache_length"); length != it->end())
      out.kv_cache = kv_cache_length(*length);
    // Summaries before 1.3 have no step or decode step.
    if (const auto step = it->find("step_bytes"); step != it->end() && !step->is_null())
      out.step_bytes = get<uint64_t>(*it, "step_bytes");
    if (it->contains("in_decode_step")) out.in_decode_step = get<bool>(*it, "in_decode_step");
    for (const json& row : at(*it, "modules")) {
      ModuleRoles m;
      m.module = get<std::string>(row, "module");
      m.bytes = role_bytes(at(row, "by_role"));
      for (uint64_t b : m.bytes) m.total += b;
      out.modules.push_back(std::move(m));
    }
    return out;
  }

  KvCacheLength kv_cache_length(const json& length) const {
    KvCacheLength l;
    l.batch = get<uint64_t>(length, "batch");
    l.tokens = get<uint64_t>(length, "tokens");
    l.capacity = get<uint64_t>(length, "capacity");
    l.bytes_per_token = get<uint64_t>(length, "bytes_per_token");
    l.layers = get<uint64_t>(length, "layers");
    // Summaries before 1.3 tell no loop from another.
    if (length.contains("growing_since_ns"))
      l.growing_since_ns = get<uint64_t>(length, "growing_since_ns");
    return l;
  }

  std::optional<uint64_t> optional_bytes(const json& object, const char* key) const {
    return at(object, key).is_null() ? std::nullopt
                                     : std::optional<uint64_t>(get<uint64_t>(object, key));
  }

  // A moment's views (summary 1.3): none where absent or null.
  std::optional<ViewValues> views(const json& object, const char* key) const {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return std::nullopt;
    const json& v = *it;
    ViewValues out;
    out.time_ns = get<uint64_t>(v, "time_ns");
    out.exact = get<bool>(v, "exact");
    out.tracked_bytes = get<uint64_t>(v, "tracked_bytes");
    out.nvml_process_bytes = optional_bytes(v, "nvml_process_bytes");
    out.nvml_device_used_bytes = optional_bytes(v, "nvml_device_used_bytes");
    out.nvml_device_total_bytes = optional_bytes(v, "nvml_device_total_bytes");
    out.nvml_other_processes_bytes = optional_bytes(v, "nvml_other_processes_bytes");
    out.driver_used_bytes = optional_bytes(v, "driver_used_bytes");
    out.driver_total_bytes = optional_bytes(v, "driver_total_bytes");
    out.pool_reserved_bytes = optional_bytes(v, "pool_reserved_bytes");
    out.pool_used_bytes = optional_bytes(v, "pool_used_bytes");
    out.graph_reserved_bytes = optional_bytes(v, "graph_reserved_bytes");
    out.graph_used_bytes = optional_bytes(v, "graph_used_bytes");
    out.framework_allocated_bytes = optional_bytes(v, "framework_allocated_bytes");
    out.framework_reserved_bytes = optional_bytes(v, "framework_reserved_bytes");
    out.framework_time_ns = optional_bytes(v, "framework_time_ns");
    out.framework_tracked_bytes = optional_bytes(v, "framework_tracked_bytes");
    if (out.driver_total_bytes && out.driver_used_bytes &&
        *out.driver_used_bytes > *out.driver_total_bytes)
      fail(std::string("\"") + key + "\": the driver's used bytes exceed its total");
    return out;
  }

  // The device's decode loop figures (summary 1.3); none in an older summary.
  void read_decode(const json& d, DeviceSummary& device) const {
    if (const auto ahead = d.find("decode_ahead"); ahead != d.end() && !ahead->is_null()) {
      allocator::DecodeAhead& a = device.decode_ahead.emplace();
      a.device = device.device;
      a.steps = get<uint64_t>(*ahead, "steps");
      a.tokens_per_step = get<uint64_t>(*ahead, "tokens_per_step");
      a.requests_per_step = get<uint64_t>(*ahead, "requests_per_step");
      a.capacity = get<uint64_t>(*ahead, "capacity");
      a.reserved = get<uint64_t>(*ahead, "reserved");
      a.kept_free = get<uint64_t>(*ahead, "kept_free");
      a.steps_that_fit = get<uint64_t>(*ahead, "steps_that_fit");
      a.tokens_that_fit = get<uint64_t>(*ahead, "tokens_that_fit");
      a.failed_size = optional_bytes(*ahead, "failed_size");
    }
    if (d.contains("decode_ahead_why_not"))
      device.decode_ahead_why_not = get<std::string>(d, "decode_ahead_why_not");
    if (const auto ran_out = d.find("decode_ran_out"); ran_out != d.end()) {
      if (!ran_out->is_array()) fail("\"decode_ran_out\" is not an array");
      for (const json& r : *ran_out)
        device.decode_ran_out.push_back(
            {kv_cache_length(at(r, "cache")), get<uint64_t>(r, "request_bytes")});
    }
  }

  // A stack reference: null (stack 0), or index i of the table, renumbered i + 1.
  uint32_t stack(const json& object, std::size_t table_size) const {
    const json& v = at(object, "stack");
    if (v.is_null()) return 0;
    const auto index = get<std::size_t>(object, "stack");
    if (index >= table_size) fail("stack " + std::to_string(index) + " is not in \"stacks\"");
    return static_cast<uint32_t>(index + 1);
  }

 private:
  std::string path_;
};

void check_version(const Reader& r, const json& root) {
  if (!root.is_object() || !root.contains("format") ||
      root["format"] != json(std::string(kSummaryFormat))) {
    r.fail(std::string("its \"format\" is not \"") + kSummaryFormat + "\"");
  }
  const std::string version = r.get<std::string>(root, "version");
  int major = 0, minor = 0;
  char dot = 0;
  std::istringstream text(version);
  if (!(text >> major >> dot >> minor) || dot != '.' || !text.eof() || major < 1) {
    r.fail("version \"" + version + "\" is not MAJOR.MINOR");
  }
  if (major > kSummaryMajor) {
    r.fail("version " + version + " is newer than this gpumemtrace reads (" +
           std::to_string(kSummaryMajor) + ".x): summarize the trace again with this version");
  }
}

// A bounded trace's history (summary 1.1, as info --json gives it): absent from older summaries,
// null for an unbounded trace.
void read_history(const Reader& r, const json& trace, TraceSummary& t) {
  const auto it = trace.find("history");
  if (it == trace.end() || it->is_null()) return;
  format::HistoryWindow& h = t.history;
  h.max_size = r.get<uint64_t>(*it, "max_size");
  h.dropped_records = r.get<uint64_t>(*it, "dropped_events");
  if (it->contains("written_bytes")) h.written_bytes = r.get<uint64_t>(*it, "written_bytes");
  if (!it->contains("kept_from_ns")) return;
  h.dropped = true;
  h.kept_from_ns = r.get<uint64_t>(*it, "kept_from_ns");
  h.carried_allocations = r.get<uint64_t>(*it, "carried_allocations");
  h.carried_bytes = r.get<uint64_t>(*it, "carried_bytes");
}

void read_identity(const Reader& r, const json& root, TraceSummary& t) {
  const json& trace = r.at(root, "trace");
  t.path = r.get<std::string>(trace, "path");
  t.format_major = r.get<uint16_t>(trace, "format_major");
  t.format_minor = r.get<uint16_t>(trace, "format_minor");
  t.pid = r.get<uint64_t>(trace, "pid");
  t.ppid = r.get<uint64_t>(trace, "ppid");
  t.host = r.get<std::string>(trace, "host");
  t.argv = r.get<std::vector<std::string>>(trace, "argv");
  t.env = r.get<std::vector<std::string>>(trace, "env");
  if (!r.at(trace, "rank").is_null()) t.rank = r.get<int>(trace, "rank");
  t.wall_start_ns = r.get<uint64_t>(trace, "wall_start_ns");
  // Written since the process's liveness is asked of a summary too (process_liveness.h); a
  // summary without it is told by its pid and wall-clock start alone.
  if (trace.contains("mono_start_ns")) t.mono_start_ns = r.get<uint64_t>(trace, "mono_start_ns");
  t.duration_ns = r.get<uint64_t>(trace, "duration_ns");
  t.events = r.get<uint64_t>(trace, "events");
  t.unmatched_frees = r.get<uint64_t>(trace, "unmatched_frees");
  t.failed_host_alloc_count = r.get<uint64_t>(trace, "failed_host_alloc_count");
  const std::string end = r.get<std::string>(trace, "end");
  bool known = false;
  for (TraceEnd e : {TraceEnd::kExited, TraceEnd::kCut, TraceEnd::kTruncated, TraceEnd::kCorrupt,
                     TraceEnd::kStopped, TraceEnd::kExec, TraceEnd::kFailed}) {
    if (end == end_name(e)) {
      t.end = e;
      known = true;
    }
  }
  if (!known) r.fail("unknown end \"" + end + "\"");
  // Whether the process still runs is of now, not of when the summary was written.
  if (t.end == TraceEnd::kCut && still_running(process_identity(t))) t.end = TraceEnd::kRunning;
  t.end_offset = r.get<uint64_t>(trace, "end_offset");
  t.end_reason = r.get<std::string>(trace, "end_reason");
  t.stop_time_ns = r.get<uint64_t>(trace, "stop_time_ns");
  t.stop_reason = r.get<std::string>(trace, "stop_reason");
  t.exec_program = r.get<std::string>(trace, "exec_program");
  t.exec_time_ns = r.get<uint64_t>(trace, "exec_time_ns");
  t.dropped_records = r.get<uint64_t>(trace, "dropped_records");
  t.notes = r.get<std::vector<std::string>>(trace, "notes");
  t.problems = r.get<std::vector<std::string>>(trace, "problems");
  t.symbolization_warnings = r.get<std::vector<std::string>>(trace, "symbolization_warnings");
  read_history(r, trace, t);
  // Written since traces record the signal that ends them (format 4.10): the signal and the
  // phases open at the end, read when there.
  if (const auto it = trace.find("signal"); it != trace.end() && !it->is_null()) {
    FatalSignal s;
    s.number = r.get<uint32_t>(*it, "number");
    s.code = r.get<int32_t>(*it, "code");
    s.address = r.get<uint64_t>(*it, "address");
    s.sender = r.get<uint64_t>(*it, "sender");
    s.time_ns = r.get<uint64_t>(*it, "time_ns");
    s.thread = r.get<uint64_t>(*it, "thread");
    t.signal = s;
  }
  if (const auto it = trace.find("open_at_end"); it != trace.end()) {
    if (!it->is_array()) r.fail("\"open_at_end\": expected an array");
    for (const json& open : *it) {
      t.open_at_end.push_back({r.get<std::string>(open, "name"), r.get<uint64_t>(open, "thread"),
                               r.get<uint64_t>(open, "start_ns")});
    }
  }
  // Summary 1.2: whether the framework recorded scopes and tags.
  if (trace.contains("roles_recorded")) {
    t.roles_recorded = r.get<bool>(trace, "roles_recorded");
    t.role_tags_unmatched = r.get<uint64_t>(trace, "role_tags_unmatched");
  }
}

// A listed leak group's roles at exit, back into its device's table of block stacks, where
// leak_role() finds them. Two groups of one device whose frames are the same (two calls on one
// line) share the summary's stack: the second gets a stack id of its own, with the same frames.
void add_leak_roles(const Reader& r, const json& entry, LeakGroup& group, SummaryInput& in) {
  const auto it = entry.find("roles");
  if (it == entry.end() || it->is_null()) return;
  const auto device = in.trace.devices.find(group.device);
  if (device == in.trace.devices.end() || !device->second.roles_at_exit)
    r.fail("a leak group has roles but its device has none at exit");
  auto& stacks = device->second.roles_at_exit->block_stacks;
  if (group.stack != 0 && std::any_of(stacks.begin(), stacks.end(),
                                      [&](const auto& s) { return s.stack == group.stack; })) {
    const auto copy = static_cast<uint32_t>(in.frames.size() + 1);
    in.frames[copy] = in.frames[group.stack];
    group.stack = copy;
  }
  stacks.push_back({group.stack, r.role_bytes(*it)});
}

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw TraceError(path + ": cannot open the summary");
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) throw TraceError(path + ": cannot read the summary");
  return text.str();
}

// The first `n` bytes of the file (fewer if it is shorter).
std::string head(const std::filesystem::path& path, std::size_t n) {
  std::ifstream file(path, std::ios::binary);
  std::string text(n, '\0');
  file.read(text.data(), static_cast<std::streamsize>(n));
  text.resize(static_cast<std::size_t>(std::max<std::streamsize>(file.gcount(), 0)));
  return text;
}

}  // namespace

ordered_json trace_summary_json(const TraceSummary& t, const ResolvedStacks& frames) {
  StackTable stacks;
  ordered_json out = {
      {"format", kSummaryFormat},
      {"version", std::to_string(kSummaryMajor) + "." + std::to_string(kSummaryMinor)}};
  out["trace"] = {{"path", t.path},
                  {"format_major", t.format_major},
                  {"format_minor", t.format_minor},
                  {"pid", t.pid},
                  {"ppid", t.ppid},
                  {"host", t.host},
                  {"argv", t.argv},
                  {"env", t.env},
                  {"rank", t.rank ? ordered_json(*t.rank) : nullptr},
                  {"wall_start_ns", t.wall_start_ns},
                  {"mono_start_ns", t.mono_start_ns},
                  {"duration_ns", t.duration_ns},
                  {"events", t.events},
                  {"unmatched_frees", t.unmatched_frees},
                  {"failed_host_alloc_count", t.failed_host_alloc_count},
                  // A process running then may not be now: its summary says what its trace
                  // holds (no End record), and the reader asks again.
                  {"end", end_name(t.end == TraceEnd::kRunning ? TraceEnd::kCut : t.end)},
                  {"end_offset", t.end_offset},
                  {"end_reason", t.end_reason},
                  {"stop_time_ns", t.stop_time_ns},
                  {"stop_reason", t.stop_reason},
                  {"exec_program", t.exec_program},
                  {"exec_time_ns", t.exec_time_ns},
                  {"dropped_records", t.dropped_records},
                  {"notes", t.notes},
                  {"problems", t.problems},
                  {"symbolization_warnings", t.symbolization_warnings},
                  {"history", history_json(t)},
                  {"roles_recorded", t.roles_recorded},
                  {"role_tags_unmatched", t.role_tags_unmatched},
                  {"signal", signal_json(t.signal)},
                  {"open_at_end", open_at_end_json(t.open_at_end)}};
  out["devices"] = devices_json(t, stacks);
  add_leaks(t, frames, stacks, out);
  out["failures"] = failures_json(t, frames, stacks);
  out["failures_not_kept"] = t.failures_not_kept;
  out["stacks"] = stacks.take();
  return out;
}

SummaryInput read_trace_summary(const std::string& path) {
  const Reader r(path);
  json root;
  try {
    root = json::parse(read_file(path));
  } catch (const json::parse_error& e) {
    r.fail(std::string("damaged JSON: ") + e.what());
  }
  check_version(r, root);
  SummaryInput in;
  TraceSummary& t = in.trace;
  t.from_summary = true;
  read_identity(r, root, t);

  const json& stacks = r.at(root, "stacks");
  if (!stacks.is_array()) r.fail("\"stacks\" is not an array");
  std::vector<std::vector<SiteFrame>> table;
  for (const json& entry : stacks) table.push_back(r.frames(entry));
  for (std::size_t i = 0; i < table.size(); ++i)
    in.frames.emplace(static_cast<uint32_t>(i + 1), table[i]);

  for (const json& d : r.at(root, "devices")) {
    const int ordinal = r.get<int>(d, "device");
    DeviceSummary& device = t.devices[ordinal];
    device.device = ordinal;
    device.identity.name = r.get<std::string>(d, "name");
    device.identity.pci_bus_id = r.get<std::string>(d, "pci_bus_id");
    device.peak_bytes = r.get<uint64_t>(d, "peak_bytes");
    device.peak_time_ns = r.get<uint64_t>(d, "peak_time_ns");
    device.peak_phase = r.get<std::string>(d, "peak_phase");
    device.live_bytes = r.get<uint64_t>(d, "live_bytes");
    device.live_count = r.get<uint64_t>(d, "live_count");
    device.alloc_count = r.get<uint64_t>(d, "alloc_count");
    device.free_count = r.get<uint64_t>(d, "free_count");
    device.teardown_free_count = r.get<uint64_t>(d, "teardown_free_count");
    device.failed_alloc_count = r.get<uint64_t>(d, "failed_alloc_count");
    for (const json& s : r.at(d, "peak_sites")) {
      ResolvedSite site;
      site.bytes = r.get<uint64_t>(s, "bytes");
      site.count = r.get<uint64_t>(s, "count");
      site.allocator = r.get<int>(s, "allocator");
      site.cache = r.get<bool>(s, "cache");
      // Summaries written before graph pools were told apart have no "graph".
      if (const auto graph = s.find("graph"); graph != s.end()) site.graph = graph->get<bool>();
      const uint32_t stack = r.stack(s, table.size());
      if (stack != 0) site.frames = table[stack - 1];
      if (s.contains("roles")) site.roles = r.role_bytes(r.at(s, "roles"));
      device.top_sites.push_back(std::move(site));
    }
    device.roles_at_peak = r.roles(d, "roles_at_peak");
    device.roles_at_exit = r.roles(d, "roles_at_exit");
    device.views_at_peak = r.views(d, "views_at_peak");
    device.views_at_exit = r.views(d, "views_at_exit");
    r.read_decode(d, device);
    if (const auto pool = d.find("hidden_pool"); pool != d.end() && !pool->is_null()) {
      HiddenPool& kept = device.kept_hidden_pool.emplace();
      kept.framework = r.get<std::string>(*pool, "framework");
      kept.bytes = r.get<uint64_t>(*pool, "bytes");
      kept.allocations = r.get<uint64_t>(*pool, "allocations");
      kept.preallocated = r.get<bool>(*pool, "preallocated");
      kept.device_total_bytes = r.get<uint64_t>(*pool, "device_total_bytes");
    }
  }

  for (const json& g : r.at(root, "leaks")) {
    LeakGroup group;
    group.device = r.get<int>(g, "device");
    group.leak_class = r.leak_class(g);
    group.bytes = r.get<uint64_t>(g, "bytes");
    group.resident_bytes = r.get<uint64_t>(g, "resident_bytes");
    group.count = r.get<uint64_t>(g, "count");
    group.growth_bytes_per_s = r.get<double>(g, "growth_bytes_per_s");
    group.freed_at_exit = r.get<bool>(g, "freed_at_exit");
    group.allocator = r.get<int>(g, "allocator");
    group.stack = r.stack(g, table.size());
    add_leak_roles(r, g, group, in);
    t.leaks.push_back(group);
  }
  // Sorted by stack, as leak_role() looks them up.
  for (auto& [ordinal, device] : t.devices) {
    if (!device.roles_at_exit) continue;
    std::sort(device.roles_at_exit->block_stacks.begin(), device.roles_at_exit->block_stacks.end(),
              [](const auto& a, const auto& b) { return a.stack < b.stack; });
  }
  // The groups past the listed ones, one per device and class, after them: counted, never
  // listed (the job view and the report list only the first kReportLeakGroups).
  for (const json& g : r.at(root, "leaks_not_listed")) {
    LeakGroup group;
    group.device = r.get<int>(g, "device");
    group.leak_class = r.leak_class(g);
    group.bytes = r.get<uint64_t>(g, "bytes");
    group.resident_bytes = r.get<uint64_t>(g, "resident_bytes");
    group.count = r.get<uint64_t>(g, "count");
    t.leaks.push_back(group);
  }

  for (const json& f : r.at(root, "failures")) {
    FailedAllocation failure;
    failure.time_ns = r.get<uint64_t>(f, "time_ns");
    failure.device = r.get<int>(f, "device");
    failure.kind = r.kind(f);
    failure.api = r.api(f, "api");
    failure.driver_api = r.api(f, "driver_api");
    failure.requested_bytes = r.get<uint64_t>(f, "requested_bytes");
    failure.error = r.get<uint32_t>(f, "error");
    failure.live_bytes = r.get<uint64_t>(f, "live_bytes");
    failure.allocator = r.get<int>(f, "allocator");
    // Summary 1.3: the allocator's own request and its cache then, and the views after.
    if (f.contains("allocator_requested_bytes")) {
      failure.allocator_requested_bytes = r.get<uint64_t>(f, "allocator_requested_bytes");
      failure.cache_free_bytes = r.get<uint64_t>(f, "cache_free_bytes");
      failure.largest_free_block_bytes = r.get<uint64_t>(f, "largest_free_block_bytes");
      failure.fragmented = r.get<bool>(f, "fragmented");
      if (failure.largest_free_block_bytes > failure.cache_free_bytes)
        r.fail("a failure's largest free block exceeds its cache's free bytes");
    }
    failure.views = r.views(f, "views");
    // Summaries written before retries were folded have none.
    if (f.contains("retries")) {
      for (const json& retry : r.at(f, "retries")) {
        failure.retries.push_back({r.get<uint64_t>(retry, "time_ns"),
                                   r.get<uint64_t>(retry, "released_bytes"),
                                   r.get<uint32_t>(retry, "error")});
      }
    }
    failure.stack = r.stack(f, table.size());
    failure.roles = r.roles(f, "roles");
    t.failures.push_back(std::move(failure));
  }
  t.failures_not_kept = r.get<uint64_t>(root, "failures_not_kept");
  return in;
}

bool starts_like_a_summary(const std::filesystem::path& path) {
  const std::string text = head(path, 256);
  std::size_t at = 0;
  const auto skip_space = [&] {
    while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
  };
  const auto expect = [&](std::string_view token) {
    skip_space();
    if (text.compare(at, token.size(), token) != 0) return false;
    at += token.size();
    return true;
  };
  return expect("{") && expect("\"format\"") && expect(":") &&
         expect(std::string("\"") + kSummaryFormat + "\"");
}

bool starts_like_json(const std::filesystem::path& path) {
  for (char c : head(path, 256)) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    return c == '{';
  }
  return false;
}

}  // namespace gmt::analyzer
