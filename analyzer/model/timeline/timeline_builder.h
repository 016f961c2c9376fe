// SPDX-License-Identifier: Apache-2.0
// Builds a Timeline while a trace is replayed: every change of a device's live bytes lands in
// the bucket of its time, and a bucket keeps the most that was live during it.
#pragma once

#include <cstdint>
#include <optional>

#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {

// The most buckets a timeline holds: a longer trace gets a coarser resolution.
inline constexpr uint64_t kMaxTimelineBuckets = 10'000;

// `requested_ns`, raised where needed so that `duration_ns` fits in kMaxTimelineBuckets.
uint64_t timeline_resolution(uint64_t requested_ns, uint64_t duration_ns);

class TimelineBuilder {
 public:
  explicit TimelineBuilder(uint64_t resolution_ns) { timeline_.resolution_ns = resolution_ns; }

  // `bytes` are now live on `device`: of `kind`, or device-resident in all when `kind` is empty.
  void set(int device, std::optional<format::MemoryKind> kind, uint64_t bytes, uint64_t time_ns);

  // A device's caching allocators' allocated and reserved bytes now (block events, format 4.2).
  void set_framework(int device, uint64_t allocated, uint64_t reserved, uint64_t time_ns);

  // Every series carried up to the bucket of `end_ns`.
  Timeline finish(uint64_t end_ns);

 private:
  struct Series {
    std::vector<uint64_t> buckets;
    uint64_t current = 0;
  };
  void carry(Series& series, std::size_t bucket) const;
  Series& series(int device, std::optional<format::MemoryKind> kind);
  void set(Series& s, uint64_t bytes, uint64_t time_ns) const;

  Timeline timeline_;
  std::map<int, Series> resident_;
  std::map<std::pair<int, format::MemoryKind>, Series> by_kind_;
  std::map<int, std::pair<Series, Series>> framework_;  // allocated, reserved
};

}  // namespace gmt::analyzer
