// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/views/views_replay.h"

#include <algorithm>

namespace gmt::analyzer {

using format::PhaseAction;
using format::SampleField;

std::optional<int64_t> ViewValues::context_overhead_bytes() const {
  if (!nvml_process_bytes) return std::nullopt;
  return static_cast<int64_t>(*nvml_process_bytes) - static_cast<int64_t>(tracked_bytes);
}

std::optional<uint64_t> ViewValues::other_processes_bytes() const {
  if (nvml_other_processes_bytes) return nvml_other_processes_bytes;
  if (nvml_device_used_bytes && nvml_process_bytes &&
      *nvml_device_used_bytes >= *nvml_process_bytes) {
    return *nvml_device_used_bytes - *nvml_process_bytes;
  }
  return std::nullopt;
}

std::optional<int64_t> ViewValues::framework_cache_bytes() const {
  if (!framework_allocated_bytes || !framework_reserved_bytes) return std::nullopt;
  return static_cast<int64_t>(*framework_reserved_bytes) -
         static_cast<int64_t>(*framework_allocated_bytes);
}

std::optional<int64_t> ViewValues::outside_framework_bytes() const {
  if (!framework_reserved_bytes) return std::nullopt;
  return static_cast<int64_t>(framework_tracked_bytes.value_or(tracked_bytes)) -
         static_cast<int64_t>(*framework_reserved_bytes);
}

void ViewsReplay::on(const format::DeviceRecord& r) {
  identities_[r.device] = DeviceIdentity{r.pci_bus_id, r.nvml_index, r.name, r.total_bytes};
}

namespace {

std::optional<uint64_t> field(const format::SampleRecord& r, uint32_t bit, uint64_t value) {
  return (r.present & bit) ? std::optional<uint64_t>(value) : std::nullopt;
}

constexpr uint32_t kFrameworkFields =
    SampleField::kFrameworkAllocated | SampleField::kFrameworkReserved;

}  // namespace

ViewValues ViewsReplay::values_of(const format::SampleRecord& r, const DeviceState& d) const {
  ViewValues v;
  v.time_ns = r.time_ns;
  const uint64_t read_start = r.time_ns >= r.read_ns ? r.time_ns - r.read_ns : 0;
  v.exact = d.last_change_ns <= read_start;
  v.tracked_bytes = d.live;
  v.nvml_process_bytes = field(r, SampleField::kNvmlProcessUsed, r.nvml_process_used);
  v.nvml_device_used_bytes = field(r, SampleField::kNvmlDeviceUsed, r.nvml_device_used);
  v.nvml_device_total_bytes = field(r, SampleField::kNvmlDeviceTotal, r.nvml_device_total);
  v.nvml_other_processes_bytes = field(r, SampleField::kNvmlOtherProcesses, r.nvml_other_processes);
  if ((r.present & SampleField::kDriverFree) && (r.present & SampleField::kDriverTotal) &&
      r.driver_total >= r.driver_free) {
    v.driver_used_bytes = r.driver_total - r.driver_free;
    v.driver_total_bytes = r.driver_total;
  }
  v.pool_reserved_bytes = field(r, SampleField::kPoolReserved, r.pool_reserved);
  v.pool_used_bytes = field(r, SampleField::kPoolUsed, r.pool_used);
  v.graph_reserved_bytes = field(r, SampleField::kGraphReserved, r.graph_reserved);
  v.graph_used_bytes = field(r, SampleField::kGraphUsed, r.graph_used);
  v.framework_allocated_bytes = field(r, SampleField::kFrameworkAllocated, r.framework_allocated);
  v.framework_reserved_bytes = field(r, SampleField::kFrameworkReserved, r.framework_reserved);
  if (r.present & kFrameworkFields) v.framework_time_ns = r.time_ns;
  // Block events say what the framework's allocator holds at every moment: no report needed.
  if (d.blocks && !(r.present & kFrameworkFields)) {
    v.framework_allocated_bytes = d.blocks->allocated;
    v.framework_reserved_bytes = d.blocks->reserved;
    v.framework_time_ns = r.time_ns;
  }
  return v;
}

// The framework's figures come on their own (pushed by the program) and the sampler's without
// them: each kind of sample is kept apart and the two are joined when a moment is reported.
void ViewsReplay::on(const format::SampleRecord& r) {
  DeviceState& d = device(r.device);
  const ViewValues v = values_of(r, d);
  if (r.reason == static_cast<uint32_t>(format::SampleReason::kFramework)) {
    d.framework_last = v;
    if (d.framework_waiting) {
      d.framework_at_peak = v;
      d.framework_waiting = false;
    }
    return;
  }
  d.last = v;
  if (d.waiting_for_peak) {
    d.at_peak = v;
    d.waiting_for_peak = false;
  }
}

ViewsReplay::DeviceState& ViewsReplay::device_slowly(int ordinal) {
  DeviceState& d = devices_[ordinal];
  if (ordinal >= 0 && ordinal < kDeviceSlots) device_slots_[static_cast<std::size_t>(ordinal)] = &d;
  return d;
}

void ViewsReplay::fold_segments() {
  for (auto& [ordinal, d] : devices_) {
    for (auto& open : phases_.open_runs()) {
      OpenPhase& p = open.value;
      if (uint64_t* max = p.max_of(ordinal)) {
        *max = std::max(*max, d.segment_max);
      } else {
        // A device first seen inside the phase: from its bytes when the phase opened, or none.
        const auto start = p.start_live.find(ordinal);
        const uint64_t from = start == p.start_live.end() ? 0 : start->second;
        p.max_live.emplace_back(ordinal, std::max(from, d.segment_max));
      }
    }
    d.segment_max = d.live;
  }
}

void ViewsReplay::name_peak_phase(DeviceState& d) {
  // The path of phases open on the thread of the innermost one: "trainer::step > backward".
  std::string path;
  const auto& open = phases_.open_runs();
  if (!open.empty()) {
    const uint64_t thread = open.back().thread;
    for (const auto& p : open) {
      if (p.thread != thread) continue;
      path += (path.empty() ? "" : " > ") + p.value.name;
    }
  }
  d.peak_phase = path;
}

void ViewsReplay::at_peak(int ordinal) {
  DeviceState& d = device(ordinal);
  d.waiting_for_peak = true;
  d.peak_live = d.live;
  d.before_peak = d.last;
  d.at_peak.reset();  // a sample after an earlier, lower peak
  d.framework_waiting = true;
  d.framework_before_peak = d.framework_last;
  d.framework_at_peak.reset();
  d.blocks_at_peak.reset();
}

namespace {

// A moment's views: the sampler's, with the framework's figures of the nearest report joined in
// when nothing was allocated or freed on the device between the two (a report from another
// moment would name a difference that does not exist).
std::optional<ViewValues> joined(const std::optional<ViewValues>& sampler,
                                 std::optional<ViewValues> framework) {
  if (sampler && framework && framework->tracked_bytes != sampler->tracked_bytes) {
    framework.reset();
  }
  if (!sampler && !framework) return std::nullopt;
  ViewValues v;
  if (sampler) {
    v = *sampler;
  } else {
    v.time_ns = framework->time_ns;
    v.tracked_bytes = framework->tracked_bytes;
    v.exact = framework->exact;
  }
  if (framework && !(sampler && sampler->framework_allocated_bytes)) {
    v.framework_allocated_bytes = framework->framework_allocated_bytes;
    v.framework_reserved_bytes = framework->framework_reserved_bytes;
    v.framework_time_ns = framework->framework_time_ns;
  }
  return v;
}

}  // namespace

namespace {

// Of the first sample after the peak and the last one before it, the one taken when the tracked
// bytes were nearest the peak's (the first after it on a tie): a program that frees right after
// its peak is better described by the sample just before.
std::optional<ViewValues> closest_to(uint64_t peak, const std::optional<ViewValues>& after,
                                     const std::optional<ViewValues>& before) {
  if (!after || !before) return after ? after : before;
  const auto distance = [peak](const ViewValues& v) {
    return v.tracked_bytes > peak ? v.tracked_bytes - peak : peak - v.tracked_bytes;
  };
  return distance(*before) < distance(*after) ? before : after;
}

}  // namespace

std::optional<ViewValues> ViewsReplay::views_at_peak(int ordinal) const {
  auto it = devices_.find(ordinal);
  if (it == devices_.end()) return std::nullopt;
  const DeviceState& d = it->second;
  std::optional<ViewValues> v =
      joined(closest_to(d.peak_live, d.at_peak, d.before_peak),
             closest_to(d.peak_live, d.framework_at_peak, d.framework_before_peak));
  if (!d.blocks_at_peak) return v;
  // The allocator's own figures at the peak are exact, where a sample's are of the moment the
  // sampler read, often between the segment's driver allocation and the allocator's events for
  // the same request (framework reserved below what it had just taken).
  if (!v) {
    v.emplace();
    v->time_ns = d.blocks_at_peak->time_ns;
    v->tracked_bytes = d.peak_live;
    v->exact = true;
  }
  v->framework_allocated_bytes = d.blocks_at_peak->allocated;
  v->framework_reserved_bytes = d.blocks_at_peak->reserved;
  v->framework_time_ns = d.blocks_at_peak->time_ns;
  v->framework_tracked_bytes = d.peak_live;
  return v;
}

std::optional<ViewValues> ViewsReplay::views_at_exit(int ordinal) const {
  auto it = devices_.find(ordinal);
  if (it == devices_.end()) return std::nullopt;
  const DeviceState& d = it->second;
  if (!d.last && !d.framework_last && d.blocks) {
    // No sample, but block events: the allocator's figures at the end, with the tracked bytes.
    ViewValues v;
    v.time_ns = std::max(d.blocks->time_ns, d.last_change_ns);
    v.tracked_bytes = d.live;
    v.framework_allocated_bytes = d.blocks->allocated;
    v.framework_reserved_bytes = d.blocks->reserved;
    v.framework_time_ns = v.time_ns;
    return v;
  }
  return joined(d.last, d.framework_last);
}

std::string ViewsReplay::peak_phase(int ordinal) const {
  auto it = devices_.find(ordinal);
  return it == devices_.end() ? std::string() : it->second.peak_phase;
}

void ViewsReplay::on(const format::NameRecord& r) {
  phases_.on(r);
}

void ViewsReplay::on(const format::PhaseRecord& r) {
  const auto action = static_cast<PhaseAction>(r.action);
  if (action == PhaseAction::kMark) {
    if (marks_.size() < kMarksKept) marks_.push_back({r.time_ns, r.tid, phases_.name(r)});
    return;
  }
  if (action == PhaseAction::kPush || action == PhaseAction::kStart) {
    fold_segments();
    OpenPhase& p = phases_.open(r);
    p.name = phases_.name(r);
    p.start_ns = r.time_ns;
    for (const auto& [ordinal, d] : devices_) {
      p.start_live[ordinal] = d.live;
      p.max_live.emplace_back(ordinal, d.live);
    }
    return;
  }
  if (auto p = phases_.close(r)) close(*p, r.time_ns, closed_);
}

void ViewsReplay::close(const OpenPhase& p, uint64_t,
                        std::map<std::pair<std::string, int>, PhaseStats>& into) const {
  for (const auto& [ordinal, d] : devices_) {
    PhaseStats& s = into[{p.name, ordinal}];
    if (s.calls == 0) {
      s.name = p.name;
      s.device = ordinal;
      s.first_start_ns = p.start_ns;
    }
    ++s.calls;
    const auto start = p.start_live.find(ordinal);
    const uint64_t start_live = start == p.start_live.end() ? 0 : start->second;
    // The phase has been open since the last segment started (fold_segments()).
    s.peak_bytes = std::max({s.peak_bytes, p.max_of(ordinal, start_live), d.segment_max});
    s.growth_bytes += static_cast<int64_t>(d.live) - static_cast<int64_t>(start_live);
  }
}

std::vector<PhaseStats> ViewsReplay::phases(uint64_t end_ns) const {
  auto all = closed_;
  for (const auto& p : phases_.open_runs()) close(p.value, end_ns, all);
  std::vector<PhaseStats> out;
  for (auto& [key, s] : all) out.push_back(std::move(s));
  std::sort(out.begin(), out.end(), [](const PhaseStats& a, const PhaseStats& b) {
    return a.first_start_ns != b.first_start_ns ? a.first_start_ns < b.first_start_ns
                                                : a.device < b.device;
  });
  return out;
}

}  // namespace gmt::analyzer
