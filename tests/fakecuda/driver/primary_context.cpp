// SPDX-License-Identifier: Apache-2.0
// The per-device primary context (what the runtime uses): reference counted, and freeing
// everything it owns when the last reference goes or when it is reset.
#include "driver/driver_state.h"

using namespace fakecuda;

namespace {

CUresult release_primary(CUdevice dev) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_device(s, dev); r != CUDA_SUCCESS) return r;
  DeviceState& d = s.devices[static_cast<size_t>(dev)];
  if (d.primary_refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--d.primary_refs == 0) deactivate_context(s, d.primary);
  return CUDA_SUCCESS;
}

CUresult reset_primary(CUdevice dev) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_device(s, dev); r != CUDA_SUCCESS) return r;
  DeviceState& d = s.devices[static_cast<size_t>(dev)];
  deactivate_context(s, d.primary);
  d.primary_refs = 0;
  return CUDA_SUCCESS;
}

constexpr unsigned kPrimaryFlagsMask = CU_CTX_SCHED_MASK | CU_CTX_LMEM_RESIZE_TO_MAX |
                                       CU_CTX_COREDUMP_ENABLE | CU_CTX_USER_COREDUMP_ENABLE |
                                       CU_CTX_SYNC_MEMOPS;

}  // namespace

extern "C" {

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_device(s, dev); r != CUDA_SUCCESS) return r;
  DeviceState& d = s.devices[static_cast<size_t>(dev)];
  if (!d.primary->alive) {
    if (CUresult r = activate_context(s, d.primary); r != CUDA_SUCCESS) return r;
  }
  ++d.primary_refs;
  *pctx = d.primary;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return release_primary(dev);
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
  return release_primary(dev);
}

CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  return reset_primary(dev);
}
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev) {
  return reset_primary(dev);
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_device(s, dev); r != CUDA_SUCCESS) return r;
  const DeviceState& d = s.devices[static_cast<size_t>(dev)];
  *flags = d.primary->flags;
  *active = d.primary->alive ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  if ((flags & ~kPrimaryFlagsMask) != 0) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_device(s, dev); r != CUDA_SUCCESS) return r;
  s.devices[static_cast<size_t>(dev)].primary->flags = flags;
  return CUDA_SUCCESS;
}

// Before CUDA 11.0 the flags could only be set while the primary context was inactive.
CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  {
    State& s = state();
    DriverLock lock(s.mutex);
    if (CUresult r = require_device(s, dev); r != CUDA_SUCCESS) return r;
    if (s.devices[static_cast<size_t>(dev)].primary->alive) {
      return CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE;
    }
  }
  return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

}  // extern "C"
