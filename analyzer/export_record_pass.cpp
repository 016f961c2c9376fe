#include "analyzer/export_record_pass.h"

#include <algorithm>
#include <optional>

#include "analyzer/mapped_file.h"
#include "analyzer/trace_error.h"
#include "format/file_header.h"
#include "format/trace_reader.h"

namespace gmt::analyzer {
namespace {

using format::SampleField;

void add_point(ViewSeries& series, uint64_t bucket, uint64_t value) {
  if (!series.empty() && series.back().first == bucket) {
    series.back().second = std::max(series.back().second, value);
  } else {
    series.emplace_back(bucket, value);
  }
}

// The views a sample carries, by the names the counters get.
std::vector<std::pair<const char*, uint64_t>> sampled_views(const format::SampleRecord& r) {
  std::vector<std::pair<const char*, uint64_t>> views;
  const auto has = [&r](uint32_t bits) { return (r.present & bits) == bits; };
  if (has(SampleField::kNvmlProcessUsed)) views.emplace_back("nvml_process", r.nvml_process_used);
  if (has(SampleField::kNvmlDeviceUsed)) views.emplace_back("nvml_device_used", r.nvml_device_used);
  if (has(SampleField::kDriverFree | SampleField::kDriverTotal) && r.driver_total >= r.driver_free)
    views.emplace_back("driver_used", r.driver_total - r.driver_free);
  if (has(SampleField::kPoolReserved)) views.emplace_back("pool_reserved", r.pool_reserved);
  if (has(SampleField::kPoolUsed)) views.emplace_back("pool_used", r.pool_used);
  if (has(SampleField::kGraphReserved)) views.emplace_back("graph_reserved", r.graph_reserved);
  if (has(SampleField::kGraphUsed)) views.emplace_back("graph_used", r.graph_used);
  if (has(SampleField::kFrameworkAllocated))
    views.emplace_back("framework_allocated", r.framework_allocated);
  if (has(SampleField::kFrameworkReserved))
    views.emplace_back("framework_reserved", r.framework_reserved);
  return views;
}

// Pairs phase boundaries into runs the way the model's phases do (views_replay.cpp): a pop
// closes the innermost push of its thread and domain, an end closes its range.
class PhaseRuns {
 public:
  explicit PhaseRuns(ExportPass& pass) : pass_(pass) {}

  void on(const format::NameRecord& r) { names_[r.id] = r.text; }

  void on(const format::PhaseRecord& r) {
    const auto action = static_cast<format::PhaseAction>(r.action);
    if (action == format::PhaseAction::kMark) return;
    if (action == format::PhaseAction::kPush || action == format::PhaseAction::kStart) {
      const std::string name =
          r.domain == 0 ? name_of(r.name) : name_of(r.domain) + "::" + name_of(r.name);
      open_.push_back({{name, r.tid, r.time_ns, 0, true},
                       action == format::PhaseAction::kPush,
                       r.domain,
                       r.range});
      return;
    }
    for (auto it = open_.rbegin(); it != open_.rend(); ++it) {
      const bool match = action == format::PhaseAction::kPop
                             ? it->pushed && it->run.thread == r.tid && it->domain == r.domain
                             : !it->pushed && it->range == r.range;
      if (!match) continue;
      keep(it->run, r.time_ns, true);
      open_.erase(std::next(it).base());
      return;
    }
  }

  void finish(uint64_t end_ns) {
    for (const Open& o : open_) keep(o.run, std::max(end_ns, o.run.start_ns), false);
    open_.clear();
  }

 private:
  struct Open {
    PhaseRun run;
    bool pushed;
    uint32_t domain;
    uint64_t range;
  };
  std::string name_of(uint32_t id) const {
    const auto it = names_.find(id);
    return it == names_.end() ? "name#" + std::to_string(id) : it->second;
  }
  void keep(PhaseRun run, uint64_t end_ns, bool ended) {
    if (pass_.phases.size() >= ExportPass::kPhaseRunsKept) {
      ++pass_.phases_not_kept;
      return;
    }
    run.end_ns = end_ns;
    run.ended = ended;
    pass_.phases.push_back(std::move(run));
  }

  ExportPass& pass_;
  std::unordered_map<uint32_t, std::string> names_;
  std::vector<Open> open_;  // few: the nesting depth plus overlapping start/end ranges
};

}  // namespace

ExportPass read_export_pass(const TraceSummary& trace, uint64_t resolution_ns) {
  MappedFile file(trace.path);
  const format::HeaderCheck header = format::check_header(file.bytes());
  if (!header.ok) throw TraceError(trace.path + ": " + header.error);
  ExportPass pass;
  pass.resolution_ns = resolution_ns;
  PhaseRuns phases(pass);
  format::TraceReader reader(file.bytes(), header.header, file.page_access());
  while (const std::optional<format::Record> record = reader.next()) {
    if (const auto* a = std::get_if<format::AllocRecord>(&*record)) {
      pass.allocated_bytes[site_key(a->device, a->stack)] += a->size;
    } else if (const auto* s = std::get_if<format::SampleRecord>(&*record);
               s != nullptr && resolution_ns > 0) {
      // A sample past the last event still lands in the last bucket: the series stays bounded.
      const uint64_t bucket = std::min(s->time_ns, trace.duration_ns) / resolution_ns;
      for (const auto& [name, value] : sampled_views(*s))
        add_point(pass.views[s->device][name], bucket, value);
    } else if (const auto* n = std::get_if<format::NameRecord>(&*record)) {
      phases.on(*n);
    } else if (const auto* p = std::get_if<format::PhaseRecord>(&*record)) {
      phases.on(*p);
    }
  }
  phases.finish(trace.duration_ns);
  return pass;
}

}  // namespace gmt::analyzer
