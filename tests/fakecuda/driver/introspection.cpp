// SPDX-License-Identifier: Apache-2.0
// The two non-CUDA exports: what NVML and tests read of this process's simulated usage.
#include "driver/driver_state.h"

extern "C" unsigned long long fakecuda_process_used_bytes(int device) {
  using namespace fakecuda;
  State& s = state();
  DriverLock lock(s.mutex);
  if (require_device(s, device) != CUDA_SUCCESS) return 0;
  return process_used_bytes(s, s.devices[static_cast<size_t>(device)]);
}

extern "C" int fakecuda_live_context_count(int device) {
  using namespace fakecuda;
  State& s = state();
  DriverLock lock(s.mutex);
  if (require_device(s, device) != CUDA_SUCCESS) return 0;
  return s.devices[static_cast<size_t>(device)].live_contexts;
}
