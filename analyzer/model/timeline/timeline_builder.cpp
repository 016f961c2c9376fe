// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/timeline/timeline_builder.h"

#include <algorithm>

namespace gmt::analyzer {

uint64_t timeline_resolution(uint64_t requested_ns, uint64_t duration_ns) {
  const uint64_t coarsest_needed = duration_ns / kMaxTimelineBuckets + 1;
  return std::max<uint64_t>({requested_ns, coarsest_needed, 1});
}

void TimelineBuilder::carry(Series& series, std::size_t bucket) const {
  // Buckets with no change hold what was live when they began.
  if (series.buckets.size() <= bucket) series.buckets.resize(bucket + 1, series.current);
}

TimelineBuilder::Series& TimelineBuilder::series(int device,
                                                 std::optional<format::MemoryKind> kind) {
  return kind ? by_kind_[{device, *kind}] : resident_[device];
}

void TimelineBuilder::set(int device, std::optional<format::MemoryKind> kind, uint64_t bytes,
                          uint64_t time_ns) {
  set(series(device, kind), bytes, time_ns);
}

void TimelineBuilder::set_framework(int device, uint64_t allocated, uint64_t reserved,
                                    uint64_t time_ns) {
  auto& [allocated_series, reserved_series] = framework_[device];
  set(allocated_series, allocated, time_ns);
  set(reserved_series, reserved, time_ns);
}

void TimelineBuilder::set(Series& s, uint64_t bytes, uint64_t time_ns) const {
  const std::size_t bucket = time_ns / timeline_.resolution_ns;
  carry(s, bucket);
  s.buckets[bucket] = std::max(s.buckets[bucket], bytes);
  s.current = bytes;
}

Timeline TimelineBuilder::finish(uint64_t end_ns) {
  const std::size_t last = end_ns / timeline_.resolution_ns;
  for (auto& [device, s] : resident_) {
    carry(s, last);
    timeline_.devices[device].resident = std::move(s.buckets);
  }
  for (auto& [key, s] : by_kind_) {
    carry(s, last);
    timeline_.devices[key.first].by_kind[key.second] = std::move(s.buckets);
  }
  for (auto& [device, series] : framework_) {
    carry(series.first, last);
    carry(series.second, last);
    timeline_.devices[device].framework_allocated = std::move(series.first.buckets);
    timeline_.devices[device].framework_reserved = std::move(series.second.buckets);
  }
  // A device whose only kinds are not device-resident still gets a (zero) resident series.
  for (auto& [device, d] : timeline_.devices) {
    if (d.resident.size() <= last) d.resident.resize(last + 1, 0);
  }
  return std::move(timeline_);
}

}  // namespace gmt::analyzer
