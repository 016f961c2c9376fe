// SPDX-License-Identifier: Apache-2.0
// The fake NVML's view of the machine: the same FAKECUDA_* configuration as the fake driver,
// devices in PCI order regardless of CUDA_VISIBLE_DEVICES, and this process's usage read from
// the fake driver when (and only when) it is loaded in the process.
#pragma once

#include <mutex>
#include <optional>
#include <vector>

#include "common/fake_config.h"
#include "nvml/nvml_api.h"

struct nvmlDevice_st {
  int physical = 0;
};

namespace fakecuda::nvml {

struct NvmlState {
  std::mutex mutex;
  int init_count = 0;
  FakeConfig config;
  nvmlDevice_st devices[kMaxDevices];
};

NvmlState& state();

// NVML_ERROR_UNINITIALIZED before nvmlInit, NVML_ERROR_INVALID_ARGUMENT for a bad handle.
nvmlReturn_t check_device(const NvmlState& s, nvmlDevice_t device);

// This process on one physical device, as the fake driver reports it; nullopt when the driver
// is not loaded or the device is hidden from CUDA (CUDA_VISIBLE_DEVICES).
struct ProcessUsage {
  unsigned long long used_bytes = 0;
  int live_contexts = 0;
};
std::optional<ProcessUsage> this_process_usage(const NvmlState& s, int physical);

}  // namespace fakecuda::nvml
