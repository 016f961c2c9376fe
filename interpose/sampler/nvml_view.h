// SPDX-License-Identifier: Apache-2.0
// NVML, loaded privately by the sampler: device and per-process memory as nvidia-smi shows it.
// Never linked: a machine without NVML (a container without the driver's user-space libraries,
// an old driver) must still trace, with this view recorded as missing.
#pragma once

#include <cstdint>
#include <string>

#include "format/records.h"

namespace gmt::interpose {

class NvmlView {
 public:
  // Loads libnvidia-ml.so.1 and initializes it. Empty on success, else why the view is missing.
  std::string open();
  bool available() const { return available_; }

  struct Device {
    void* handle = nullptr;
    int index = -1;
    std::string name;
  };
  // The NVML device with this PCI bus id ("0000:17:00.0", any domain width), matched by number:
  // CUDA ordinals and NVML indices differ under CUDA_VISIBLE_DEVICES.
  Device find(const std::string& pci_bus_id);

  // Fills the NVML fields of `sample`. `listed` says whether NVML listed `pid` on the device:
  // in a container's PID namespace it lists the host's pids, which are not ours.
  void read(const Device& device, uint64_t pid, format::SampleRecord& sample, bool& listed);

 private:
  template <class Fn>
  Fn symbol(const char* name);

  void* library_ = nullptr;
  bool available_ = false;
};

}  // namespace gmt::interpose
