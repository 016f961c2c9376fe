// SPDX-License-Identifier: Apache-2.0
#include <array>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "analyzer/export/export_formats.h"
#include "analyzer/model/leak_classes.h"
#include "analyzer/report/frames/frame_text.h"
#include "analyzer/report/job_view.h"
#include "analyzer/report/json/json_fields.h"
#include "analyzer/report/roles_report.h"

namespace gmt::analyzer {
namespace {

using nlohmann::ordered_json;

// 16 hex digits of FNV-1a (64 bits) of the site's identity: the same for the same code in every
// process, short enough to group by.
std::string site_id(const std::vector<SiteFrame>& frames) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const unsigned char c : site_identity(frames)) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

const std::vector<SiteFrame>& frames_of(const ResolvedStacks& frames, uint32_t stack) {
  static const std::vector<SiteFrame> kNone;
  const auto found = frames.find(stack);
  return found != frames.end() ? found->second : kNone;
}

// One row: a site's (frames set), or a role's or a module's at a moment (no frames).
struct Row {
  Row(const char* row_class, uint64_t bytes, uint64_t count, int allocator = -1,
      const std::vector<SiteFrame>* frames = nullptr)
      : row_class(row_class), bytes(bytes), count(count), allocator(allocator), frames(frames) {}
  const char* row_class;
  uint64_t bytes;
  uint64_t count;
  int allocator;
  const std::vector<SiteFrame>* frames;
  std::optional<std::string> role;           // the role, or "mostly ROLE" for a site's mix
  std::array<uint64_t, kRoleCount> roles{};  // a site's bytes by role (all 0: not known)
  std::string module;                        // a module's row: its qualified name
};

// A trace's rows, written at once by flush(): a site's label tells it apart from the trace's
// other sites (site_labels, frame_text.h), which it needs all of them to do.
class RowWriter {
 public:
  RowWriter(const TraceSummary& t, std::size_t index, std::ostream& out)
      : trace_(t), index_(index), out_(out) {}

  void row(int device, const Row& r) { rows_.emplace_back(device, r); }

  void flush() {
    std::vector<const std::vector<SiteFrame>*> stacks;
    for (const auto& [device, r] : rows_) {
      if (r.frames != nullptr) stacks.push_back(r.frames);
    }
    const std::vector<std::string> labels = site_labels(stacks);
    std::size_t site = 0;
    for (const auto& [device, r] : rows_) write(device, r, r.frames ? &labels[site++] : nullptr);
    rows_.clear();
  }

 private:
  void write(int device, const Row& r, const std::string* label) {
    const auto d = trace_.devices.find(device);
    const bool site = r.frames != nullptr;
    const ordered_json row = {
        {"trace", index_},
        {"path", trace_.path},
        {"pid", trace_.pid},
        {"host", trace_.host},
        {"rank", rank_json(trace_)},
        {"device", device},
        {"device_peak_bytes", d != trace_.devices.end() ? d->second.peak_bytes : 0},
        {"class", r.row_class},
        {"bytes", r.bytes},
        {"count", r.count},
        {"allocator", r.allocator >= 0 ? ordered_json(allocator_name(r.allocator)) : nullptr},
        {"site", site ? ordered_json(label->empty() ? "(no stack)" : *label) : nullptr},
        {"site_id", site ? ordered_json(site_id(*r.frames)) : nullptr},
        {"frames", site ? frames_json(*r.frames) : nullptr},
        {"role", r.role ? ordered_json(*r.role) : nullptr},
        {"roles", role_label(r.roles) ? role_bytes_json(r.roles) : nullptr},
        {"module", r.module.empty() ? nullptr : ordered_json(r.module)}};
    out_ << row.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  }

  const TraceSummary& trace_;
  std::size_t index_;
  std::ostream& out_;
  std::vector<std::pair<int, Row>> rows_;
};

// A moment's roles (`peak_role`, `exit_role`: a row per role that holds bytes) and, at the peak,
// its modules (`peak_module`: a row per module and role), in the long form a query pivots.
void write_role_rows(RowWriter& rows, int device, const RoleBreakdown& roles,
                     const char* role_class, const char* module_class) {
  for (std::size_t i = 0; i < kRoleCount; ++i) {
    const RoleFigure& f = roles.roles[i];
    if (f.bytes == 0) continue;
    Row row{role_class, f.bytes, f.count};
    row.role = role_name(static_cast<Role>(i));
    rows.row(device, row);
  }
  if (module_class == nullptr) return;
  for (std::size_t m = 0; m < roles.modules.size() && m < kReportModules; ++m) {
    const ModuleRoles& module = roles.modules[m];
    for (std::size_t i = 0; i < kRoleCount; ++i) {
      if (module.bytes[i] == 0) continue;
      Row row{module_class, module.bytes[i], 0};
      row.role = role_name(static_cast<Role>(i));
      row.module = module.module;
      rows.row(device, row);
    }
  }
}

void write_trace_rows(const TraceSummary& t, std::size_t index, const ResolvedStacks& frames,
                      std::ostream& out) {
  RowWriter rows(t, index, out);
  std::set<int> devices;
  for (const auto& [ordinal, d] : t.devices) devices.insert(ordinal);
  for (std::size_t g = 0; g < t.leaks.size() && g < kReportLeakGroups; ++g)
    devices.insert(t.leaks[g].device);
  for (const FailedAllocation& f : t.failures) devices.insert(f.device);

  for (const int device : devices) {
    if (const auto d = t.devices.find(device); d != t.devices.end()) {
      for (const ResolvedSite& s : d->second.top_sites) {
        Row row{s.cache ? "peak_cache" : "peak", s.bytes, s.count, s.allocator, &s.frames};
        row.role = role_label(s.roles);
        row.roles = s.roles;
        rows.row(device, row);
      }
      if (t.roles_recorded && d->second.roles_at_peak)
        write_role_rows(rows, device, *d->second.roles_at_peak, "peak_role", "peak_module");
      if (t.roles_recorded && d->second.roles_at_exit)
        write_role_rows(rows, device, *d->second.roles_at_exit, "exit_role", nullptr);
    }
    for (std::size_t g = 0; g < t.leaks.size() && g < kReportLeakGroups; ++g) {
      const LeakGroup& leak = t.leaks[g];
      if (leak.device != device) continue;
      Row row{leak_class_name(leak.leak_class), leak.bytes, leak.count, leak.allocator,
              &frames_of(frames, leak.stack)};
      row.roles = leak_roles(t, leak);
      row.role = role_label(row.roles);
      rows.row(device, row);
    }
    // Failed allocations by site, in the order of each site's first failure.
    struct Failed {
      const std::vector<SiteFrame>* frames;
      uint64_t bytes = 0, count = 0;
      int allocator = -1;
    };
    std::vector<Failed> failed;
    std::map<std::string, std::size_t> by_site;
    for (const FailedAllocation& f : t.failures) {
      if (f.device != device) continue;
      const std::vector<SiteFrame>& site = frames_of(frames, f.stack);
      const auto [at, added] = by_site.try_emplace(site_identity(site), failed.size());
      if (added) failed.push_back({&site, 0, 0, f.allocator});
      failed[at->second].bytes += f.requested_bytes;
      ++failed[at->second].count;
    }
    for (const Failed& f : failed) {
      rows.row(device, Row{"failed", f.bytes, f.count, f.allocator, f.frames});
    }
  }
  rows.flush();
}

}  // namespace

void write_jsonl(const ReportInput& input, std::ostream& out) {
  for (std::size_t i = 0; i < input.traces.size(); ++i)
    write_trace_rows(input.traces[i], i, input.frames[i], out);
}

}  // namespace gmt::analyzer
