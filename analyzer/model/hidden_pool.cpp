// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/hidden_pool.h"

#include <string_view>

#include "analyzer/model/owner_library.h"
#include "analyzer/model/trace_env.h"

namespace gmt::analyzer {
namespace {

// XLA's allocators that make an allocation per array: `platform` (cudaMalloc and cudaFree) and
// `cuda_async` (cudaMallocAsync). Unset, `default` and `bfc` pool.
bool xla_pools(const TraceSummary& trace) {
  const auto allocator = env_value(trace.env, "XLA_PYTHON_CLIENT_ALLOCATOR");
  return !allocator || (*allocator != "platform" && *allocator != "cuda_async");
}

uint64_t device_total(const DeviceSummary& device) {
  if (device.identity.total_bytes > 0) return device.identity.total_bytes;
  if (device.views_at_peak && device.views_at_peak->driver_total_bytes)
    return *device.views_at_peak->driver_total_bytes;
  return 0;
}

}  // namespace

std::optional<HiddenPool> hidden_pool(const TraceSummary& trace, const DeviceSummary& device) {
  if (trace.from_summary) return device.kept_hidden_pool;
  if (!xla_pools(trace)) return std::nullopt;
  OwnerLibraryCache owners(trace);
  HiddenPool pool;
  for (const PeakSite& site : device.peak_sites) {
    if (site.allocator >= 0 || owners.of(site.stack) != "jax") continue;
    pool.bytes += site.bytes;
    pool.allocations += site.count;
  }
  if (pool.bytes == 0) return std::nullopt;
  pool.framework = "jax";
  const auto preallocate = env_value(trace.env, "XLA_PYTHON_CLIENT_PREALLOCATE");
  pool.preallocated = !preallocate || (*preallocate != "false" && *preallocate != "0");
  pool.device_total_bytes = device_total(device);
  return pool;
}

}  // namespace gmt::analyzer
