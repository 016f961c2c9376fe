// SPDX-License-Identifier: Apache-2.0
#include <cstdio>
#include <map>
#include <set>

#include "analyzer/export/export_formats.h"
#include "analyzer/model/leak_classes.h"
#include "analyzer/report/job_view.h"
#include "analyzer/report/json_fields.h"

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

class RowWriter {
 public:
  RowWriter(const TraceSummary& t, std::size_t index, std::ostream& out)
      : trace_(t), index_(index), out_(out) {}

  void row(int device, const char* row_class, uint64_t bytes, uint64_t count, int allocator,
           const std::vector<SiteFrame>& frames) {
    const auto d = trace_.devices.find(device);
    const ordered_json row = {
        {"trace", index_},
        {"path", trace_.path},
        {"pid", trace_.pid},
        {"host", trace_.host},
        {"rank", rank_json(trace_)},
        {"device", device},
        {"device_peak_bytes", d != trace_.devices.end() ? d->second.peak_bytes : 0},
        {"class", row_class},
        {"bytes", bytes},
        {"count", count},
        {"allocator", allocator >= 0 ? ordered_json(allocator_name(allocator)) : nullptr},
        {"site", site_name(frames)},
        {"site_id", site_id(frames)},
        {"frames", frames_json(frames)}};
    out_ << row.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  }

 private:
  const TraceSummary& trace_;
  std::size_t index_;
  std::ostream& out_;
};

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
      for (const ResolvedSite& s : d->second.top_sites)
        rows.row(device, s.cache ? "peak_cache" : "peak", s.bytes, s.count, s.allocator, s.frames);
    }
    for (std::size_t g = 0; g < t.leaks.size() && g < kReportLeakGroups; ++g) {
      const LeakGroup& leak = t.leaks[g];
      if (leak.device != device) continue;
      rows.row(device, leak_class_name(leak.leak_class), leak.bytes, leak.count, leak.allocator,
               frames_of(frames, leak.stack));
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
    for (const Failed& f : failed)
      rows.row(device, "failed", f.bytes, f.count, f.allocator, *f.frames);
  }
}

}  // namespace

void write_jsonl(const ReportInput& input, std::ostream& out) {
  for (std::size_t i = 0; i < input.traces.size(); ++i)
    write_trace_rows(input.traces[i], i, input.frames[i], out);
}

}  // namespace gmt::analyzer
