// SPDX-License-Identifier: Apache-2.0
// cuMemGetInfo: what the driver says is free on the current context's device.
//
// total = capacity; free = capacity - this process (device-resident bytes + context overhead)
// - other processes, never below zero.
#include <algorithm>

#include "driver/driver_state.h"

using namespace fakecuda;

extern "C" {

CUresult CUDAAPI cuMemGetInfo_v2(size_t* free, size_t* total) {
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* ctx = nullptr;
  if (CUresult r = require_context(s, &ctx); r != CUDA_SUCCESS) return r;
  const DeviceState& d = s.devices[static_cast<size_t>(ctx->device)];
  unsigned __int128 used =
      static_cast<unsigned __int128>(process_used_bytes(s, d)) + d.other_processes;
  *total = d.capacity;
  *free = used >= d.capacity ? 0 : static_cast<size_t>(d.capacity - used);
  return CUDA_SUCCESS;
}

// The 32-bit ABI saturates instead of wrapping.
CUresult CUDAAPI cuMemGetInfo(unsigned int* free, unsigned int* total) {
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  CUresult r = cuMemGetInfo_v2(&free_bytes, &total_bytes);
  if (r != CUDA_SUCCESS) return r;
  *free = static_cast<unsigned>(std::min<size_t>(free_bytes, 0xffffffffu));
  *total = static_cast<unsigned>(std::min<size_t>(total_bytes, 0xffffffffu));
  return CUDA_SUCCESS;
}

}  // extern "C"
