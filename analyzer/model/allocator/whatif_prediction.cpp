// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/allocator/whatif_prediction.h"

#include <algorithm>

#include "analyzer/model/input/mapped_file.h"

namespace gmt::analyzer::allocator {
namespace {

// What the allocator on `d` may hold in the prediction, and what is held outside it.
void place_capacity(const DeviceReplayResult& d, const WhatIfOptions& options,
                    DevicePrediction& p) {
  p.total_bytes = options.device_memory.value_or(d.total_bytes);
  const uint64_t bound = d.recorded_capacity_bound;
  if (bound != UINT64_MAX && d.total_bytes != 0 && bound < d.total_bytes)
    p.outside_bytes = d.total_bytes - bound;
  if (p.total_bytes != 0) {
    p.capacity = p.total_bytes - std::min(p.total_bytes, p.outside_bytes);
  } else if (bound != UINT64_MAX) {
    p.capacity = bound;  // the device's size not recorded: the failures are all there is
  }
}

}  // namespace

WhatIfResult predict_whatif(std::span<const uint8_t> bytes, const std::string& name,
                            const WhatIfOptions& options, format::PageAccess pages) {
  WhatIfResult out;
  if (options.alloc_conf) out.conf = parse_alloc_conf(*options.alloc_conf);
  TraceReplayResult unchanged = replay_trace(bytes, name, {}, pages);
  out.block_events = unchanged.block_events;
  out.cuda_graph_captures = unchanged.cuda_graph_captures;
  out.history_dropped = unchanged.history_dropped;
  out.problems = unchanged.problems;
  out.changed = options.alloc_conf.has_value() || options.device_memory.has_value();

  ReplayOptions changed;
  changed.alloc_conf = options.alloc_conf;
  changed.what_if = true;
  for (const DeviceReplayResult& d : unchanged.devices) {
    DevicePrediction p;
    p.device = d.device;
    p.recorded_max_allocated = d.recorded_max_allocated;
    p.recorded_max_reserved = d.recorded_max_reserved;
    p.fidelity = d;
    place_capacity(d, options, p);
    if (p.capacity != UINT64_MAX) changed.capacity[d.device] = p.capacity;
    // Without a change, the prediction is the unchanged replay's.
    p.predicted_max_allocated = d.stats.max_allocated_bytes;
    p.predicted_max_reserved = d.stats.max_reserved_bytes;
    p.fits = d.failed_requests == 0;
    p.first_failed_size = d.first_failed_size;
    p.gaps = d.gaps;
    out.devices.push_back(std::move(p));
  }
  if (!out.changed) return out;

  const TraceReplayResult what_if = replay_trace(bytes, name, changed, pages);
  for (DevicePrediction& p : out.devices) {
    const auto it = std::find_if(what_if.devices.begin(), what_if.devices.end(),
                                 [&](const DeviceReplayResult& d) { return d.device == p.device; });
    if (it == what_if.devices.end()) continue;
    p.predicted_max_allocated = it->stats.max_allocated_bytes;
    p.predicted_max_reserved = it->stats.max_reserved_bytes;
    p.fits = it->failed_requests == 0;
    p.first_failed_size = it->first_failed_size;
    p.recorded_failures_served = it->recorded_failures_served;
    p.gaps = it->gaps;
  }
  return out;
}

WhatIfResult predict_whatif_file(const std::string& path, const WhatIfOptions& options) {
  MappedFile file(path);
  return predict_whatif(file.bytes(), path, options, file.page_access());
}

}  // namespace gmt::analyzer::allocator
