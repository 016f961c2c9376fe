// SPDX-License-Identifier: Apache-2.0
// CUDA IPC: cudaIpcMemHandle_t has the driver handle's layout (64 opaque bytes).
#include <cstring>

#include "runtime/runtime_state.h"

using namespace fakecuda::runtime;

static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(CUipcMemHandle));

extern "C" {

cudaError_t CUDARTAPI cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* devPtr) {
  if (handle == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  CUipcMemHandle driver_handle;
  CUresult r = driver().cuIpcGetMemHandle(&driver_handle, reinterpret_cast<CUdeviceptr>(devPtr));
  if (r == CUDA_SUCCESS) std::memcpy(handle, &driver_handle, sizeof driver_handle);
  return finish(r);
}

cudaError_t CUDARTAPI cudaIpcOpenMemHandle(void** devPtr, cudaIpcMemHandle_t handle,
                                           unsigned int flags) {
  if (devPtr == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  CUipcMemHandle driver_handle;
  std::memcpy(&driver_handle, &handle, sizeof driver_handle);
  CUdeviceptr p = 0;
  CUresult r = driver().cuIpcOpenMemHandle(&p, driver_handle, flags);
  if (r == CUDA_SUCCESS) *devPtr = reinterpret_cast<void*>(p);
  return finish(r);
}

cudaError_t CUDARTAPI cudaIpcCloseMemHandle(void* devPtr) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuIpcCloseMemHandle(reinterpret_cast<CUdeviceptr>(devPtr)));
}

}  // extern "C"
