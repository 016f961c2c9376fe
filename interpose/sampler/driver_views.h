// SPDX-License-Identifier: Apache-2.0
// What the sampler asks the CUDA driver, behind an interface so that the recorder needs no CUDA
// types (the implementation is interpose/hooks/driver_views_of_driver.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "format/records.h"

namespace gmt::interpose {

class DriverViews {
 public:
  virtual ~DriverViews() = default;

  // "0000:17:00.0" for CUDA ordinal `device`, empty when the driver cannot say.
  virtual std::string pci_bus_id(int device) = 0;
  virtual uint64_t total_bytes(int device) = 0;
  // Fills the driver's fields of `sample` (cuMemGetInfo, and the stream-ordered pool's and graph
  // memory's attributes when asked), setting their `present` bits, for a device whose primary
  // context is alive. Never creates a context and never changes a program thread's current one.
  virtual void read(int device, bool pools, bool graphs, format::SampleRecord& sample) = 0;

  // Held by the hooks of a primary context's release and reset around the real call, and by
  // `read` while it holds a reference: the sampler's reference must never be the one that
  // outlives the program's last release.
  virtual void lock_teardown() = 0;
  virtual void unlock_teardown() = 0;
};

}  // namespace gmt::interpose
