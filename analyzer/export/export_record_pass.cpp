// SPDX-License-Identifier: Apache-2.0
#include "analyzer/export/export_record_pass.h"
#include "analyzer/model/phase_matcher.h"

#include <algorithm>
#include <optional>

#include "analyzer/model/blocks/block_replay.h"
#include "analyzer/model/input/mapped_file.h"
#include "analyzer/model/input/trace_error.h"
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

// The phase runs of the trace, paired as the model's phases are (PhaseMatcher).
class PhaseRuns {
 public:
  explicit PhaseRuns(ExportPass& pass) : pass_(pass) {}

  void on(const format::NameRecord& r) { matcher_.on(r); }

  void on(const format::PhaseRecord& r) {
    const auto action = static_cast<format::PhaseAction>(r.action);
    if (action == format::PhaseAction::kMark) return;
    if (action == format::PhaseAction::kPush || action == format::PhaseAction::kStart) {
      matcher_.open(r) = {matcher_.name(r), r.tid, r.time_ns, 0, true};
      return;
    }
    if (auto run = matcher_.close(r)) keep(std::move(*run), r.time_ns, true);
  }

  void finish(uint64_t end_ns) {
    for (const auto& o : matcher_.open_runs()) {
      keep(o.value, std::max(end_ns, o.value.start_ns), false);
    }
    matcher_.open_runs().clear();
  }

 private:
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
  PhaseMatcher<PhaseRun> matcher_;
};

}  // namespace

ExportPass read_export_pass(const TraceSummary& trace, uint64_t resolution_ns) {
  MappedFile file(trace.path);
  const format::HeaderCheck header = format::check_header(file.bytes());
  if (!header.ok) throw TraceError(trace.path + ": " + header.error);
  ExportPass pass;
  pass.resolution_ns = resolution_ns;
  PhaseRuns phases(pass);
  // A caching allocator's allocated and reserved bytes at each of its block events: where it
  // reported blocks, they are the framework's series, not the figures the program sampled.
  BlockReplay blocks;
  std::map<int, std::map<std::string, ViewSeries>> block_views;
  format::TraceReader reader(file.bytes(), header.header, file.page_access());
  while (const std::optional<format::Record> record = reader.next()) {
    if (const auto* a = std::get_if<format::AllocRecord>(&*record)) {
      pass.allocated_bytes[site_key(a->device, a->stack)] += a->size;
    } else if (const auto* b = std::get_if<format::BlockRecord>(&*record);
               b != nullptr && resolution_ns > 0) {
      blocks.on(*b);
      const uint64_t bucket = std::min(b->time_ns, trace.duration_ns) / resolution_ns;
      auto& series = block_views[b->device];
      add_point(series["framework_allocated"], bucket, blocks.allocated_bytes(b->device));
      add_point(series["framework_reserved"], bucket, blocks.reserved_bytes(b->device));
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
  for (auto& [device, series] : block_views) {
    for (auto& [name, points] : series) pass.views[device][name] = std::move(points);
  }
  return pass;
}

}  // namespace gmt::analyzer
