// SPDX-License-Identifier: Apache-2.0
#include "nvml/nvml_state.h"

#include <dlfcn.h>

#include "common/fakecuda_introspection.h"

namespace fakecuda::nvml {

NvmlState& state() {
  static auto* instance = new NvmlState;
  return *instance;
}

nvmlReturn_t check_device(const NvmlState& s, nvmlDevice_t device) {
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  const nvmlDevice_st* first = &s.devices[0];
  if (device < first || device >= first + s.config.physical_device_count) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return NVML_SUCCESS;
}

// NVML never links libcuda: it only looks at a libcuda.so.1 the process already loaded.
std::optional<ProcessUsage> this_process_usage(const NvmlState& s, int physical) {
  int ordinal = -1;
  for (size_t i = 0; i < s.config.visible.size(); ++i) {
    if (s.config.visible[i] == physical) ordinal = static_cast<int>(i);
  }
  if (ordinal < 0) return std::nullopt;
  void* driver = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
  if (driver == nullptr) return std::nullopt;
  auto used = reinterpret_cast<fakecuda_process_used_bytes_fn>(
      dlsym(driver, "fakecuda_process_used_bytes"));
  auto contexts = reinterpret_cast<fakecuda_live_context_count_fn>(
      dlsym(driver, "fakecuda_live_context_count"));
  std::optional<ProcessUsage> usage;
  if (used != nullptr && contexts != nullptr) {
    usage = ProcessUsage{used(ordinal), contexts(ordinal)};
  }
  dlclose(driver);  // balances the reference RTLD_NOLOAD took
  return usage;
}

}  // namespace fakecuda::nvml
