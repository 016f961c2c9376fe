// SPDX-License-Identifier: Apache-2.0
// The driver's side of the views, for the sampler: cuMemGetInfo and the pool and graph-memory
// attributes, read through a primary context that already exists.
#pragma once

#include <mutex>

#include "interpose/hooks/cuda_api.h"
#include "interpose/hooks/entry_points.h"
#include "interpose/sampler/driver_views.h"

namespace gmt::interpose {

class DriverViewsOfDriver final : public DriverViews {
 public:
  explicit DriverViewsOfDriver(DriverEntryPoints& driver) : driver_(driver) {}

  std::string pci_bus_id(int device) override;
  uint64_t total_bytes(int device) override;
  void read(int device, bool pools, bool graphs, format::SampleRecord& sample) override;
  void lock_teardown() override { teardown_.lock(); }
  void unlock_teardown() override { teardown_.unlock(); }

 private:
  void read_pool(CUdevice dev, format::SampleRecord& sample);
  void read_graph_memory(CUdevice dev, format::SampleRecord& sample);

  DriverEntryPoints& driver_;
  std::mutex teardown_;
};

}  // namespace gmt::interpose
