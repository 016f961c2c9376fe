// SPDX-License-Identifier: Apache-2.0
// What some exports need that the model does not keep, read in one more pass over the trace's
// records: the bytes allocated at each site over the whole run (pprof's alloc_space), each
// device's views over time (sampled, and a caching allocator's allocated and reserved bytes from
// its block events) and each run of a phase (perfetto's counters and slices).
// Memory grows with the number of sites, of timeline buckets, of phases kept and of the
// allocators' live blocks, never with the number of records.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {

// One view's values over time, downsampled: (bucket index, the most the view said during that
// bucket), in time order, only buckets that had a sample.
using ViewSeries = std::vector<std::pair<uint64_t, uint64_t>>;

// One run of a phase, from its push or start to its pop or end (or the end of the trace).
struct PhaseRun {
  std::string name;  // "domain::name" for a phase of a named NVTX domain
  uint64_t thread = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  bool ended = true;  // false: still open when the trace ended
};

struct ExportPass {
  std::unordered_map<uint64_t, uint64_t> allocated_bytes;  // by site_key(device, stack)
  uint64_t resolution_ns = 0;
  // Per device, per view ("nvml_process", "driver_used", "framework_allocated"...).
  std::map<int, std::map<std::string, ViewSeries>> views;
  // The first kPhaseRunsKept runs, in order of their end; past that only counted.
  static constexpr std::size_t kPhaseRunsKept = 10'000;
  std::vector<PhaseRun> phases;
  uint64_t phases_not_kept = 0;
};

// Reads `trace.path` again. `resolution_ns` is the views' bucket width (0: no views). Throws
// TraceError when the file cannot be read (it could, a moment ago, for the model).
ExportPass read_export_pass(const TraceSummary& trace, uint64_t resolution_ns);

}  // namespace gmt::analyzer
