// SPDX-License-Identifier: Apache-2.0
// What the other views (NVML, the driver, the framework) said at the moments that matter, and
// the phases: the model side of the sampler's and the phase markers' records.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gmt::analyzer {

// The views of one device at one moment, beside the tracked bytes at that same moment. A view
// that could not be read is empty.
struct ViewValues {
  uint64_t time_ns = 0;  // when the views were read (the end of the reading)
  // No tracked allocation or free on the device while the views were read: the differences
  // below are exact for that moment.
  bool exact = false;
  uint64_t tracked_bytes = 0;  // device-resident bytes the trace holds live then
  std::optional<uint64_t> nvml_process_bytes;
  std::optional<uint64_t> nvml_device_used_bytes;
  std::optional<uint64_t> nvml_device_total_bytes;
  std::optional<uint64_t> nvml_other_processes_bytes;
  std::optional<uint64_t> driver_used_bytes;  // cuMemGetInfo total - free
  std::optional<uint64_t> driver_total_bytes;
  std::optional<uint64_t> pool_reserved_bytes;
  std::optional<uint64_t> pool_used_bytes;
  std::optional<uint64_t> graph_reserved_bytes;
  std::optional<uint64_t> graph_used_bytes;
  // The framework's own figures, from the nearest report the program made (gpumemtrace.h).
  std::optional<uint64_t> framework_allocated_bytes;
  std::optional<uint64_t> framework_reserved_bytes;
  std::optional<uint64_t> framework_time_ns;
  // The tracked bytes the framework's figures pair with, where they are of another moment than
  // the sample's: a caching allocator's block events give its figures at the peak itself (the
  // segment and the blocks made for the request that reached it), not when the sampler read.
  std::optional<uint64_t> framework_tracked_bytes;

  // The named differences. Empty when a view they need is missing.
  // This process's memory that no tracked allocation explains: contexts, modules, kernels'
  // static memory, the driver's own allocations.
  std::optional<int64_t> context_overhead_bytes() const;
  // Memory other processes hold on the device.
  std::optional<uint64_t> other_processes_bytes() const;
  // What the framework keeps cached (reserved - allocated).
  std::optional<int64_t> framework_cache_bytes() const;
  // Tracked bytes outside the framework's own allocator (tracked - framework reserved).
  std::optional<int64_t> outside_framework_bytes() const;
};

// What the sampler learnt about a device.
struct DeviceIdentity {
  std::string pci_bus_id;
  int nvml_index = -1;
  std::string name;
  uint64_t total_bytes = 0;
};

// A phase's figures on one device, over all the times it ran.
struct PhaseStats {
  std::string name;  // "domain::name" for a phase of a named NVTX domain
  int device = -1;
  uint64_t calls = 0;
  uint64_t peak_bytes = 0;   // the most device-resident bytes live while it ran
  int64_t growth_bytes = 0;  // live bytes at its ends minus at its starts, summed over calls
  uint64_t first_start_ns = 0;
};

// A phase still open at the trace's end (a test of the pytest plugin is one, "pytest NODEID #N").
struct OpenAtEnd {
  std::string name;
  uint64_t thread = 0;
  uint64_t start_ns = 0;
};

struct PhaseMark {
  uint64_t time_ns = 0;
  uint64_t thread = 0;
  std::string name;
};

}  // namespace gmt::analyzer
