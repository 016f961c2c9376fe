#include "analyzer/replay.h"

#include <variant>

namespace gmt::analyzer {

DeviceSummary& Replay::device(int ordinal) {
  DeviceSummary& d = summary_.devices[ordinal];
  d.device = ordinal;
  return d;
}

void Replay::apply(const format::Record& record) {
  std::visit([this](const auto& r) { on(r); }, record);
}

void Replay::on(const format::ProcessInfoRecord& r) {
  summary_.pid = r.pid;
  summary_.ppid = r.ppid;
  summary_.host = r.host;
  summary_.argv = r.argv;
  summary_.wall_start_ns = r.wall_start_ns;
}

void Replay::release(const LiveAllocation& allocation) {
  DeviceSummary& d = device(allocation.device);
  if (format::counts_toward_device_usage(allocation.kind)) d.live_bytes -= allocation.size;
  --d.live_count;
}

void Replay::on(const format::AllocRecord& r) {
  ++summary_.events;
  summary_.duration_ns = r.time_ns;
  // The same address live twice means we missed a free (one made before tracing, or by an
  // API not hooked yet): the old allocation is gone, or the driver could not reuse its address.
  if (auto it = live_.find(r.address); it != live_.end()) {
    release(it->second);
    live_.erase(it);
  }
  live_.emplace(r.address, LiveAllocation{r.device, r.kind, r.size});
  DeviceSummary& d = device(r.device);
  ++d.alloc_count;
  ++d.live_count;
  if (format::counts_toward_device_usage(r.kind)) {
    d.live_bytes += r.size;
    if (d.live_bytes > d.peak_bytes) {
      d.peak_bytes = d.live_bytes;
      d.peak_time_ns = r.time_ns;
    }
  }
}

void Replay::on(const format::FreeRecord& r) {
  ++summary_.events;
  summary_.duration_ns = r.time_ns;
  auto it = live_.find(r.address);
  if (it == live_.end()) {
    ++summary_.unmatched_frees;
    return;
  }
  ++device(it->second.device).free_count;
  release(it->second);
  live_.erase(it);
}

void Replay::on(const format::AllocFailedRecord& r) {
  ++summary_.events;
  summary_.duration_ns = r.time_ns;
  ++device(r.device).failed_alloc_count;
}

void Replay::on(const format::EndRecord& r) {
  summary_.duration_ns = r.time_ns;
  summary_.end = TraceEnd::kExited;
}

}  // namespace gmt::analyzer
