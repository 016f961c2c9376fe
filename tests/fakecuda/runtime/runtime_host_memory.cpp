// SPDX-License-Identifier: Apache-2.0
// Page-locked host memory: cudaMallocHost and cudaHostAlloc (both cuMemHostAlloc, as in the
// real runtime), cudaFreeHost, cudaHostRegister/Unregister, cudaHostGetDevicePointer.
#include "runtime/runtime_state.h"

using namespace fakecuda::runtime;

extern "C" {

cudaError_t CUDARTAPI cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  if (pHost == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuMemHostAlloc(pHost, size, flags));
}

cudaError_t CUDARTAPI cudaMallocHost(void** ptr, size_t size) {
  if (ptr == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuMemHostAlloc(ptr, size, 0));
}

cudaError_t CUDARTAPI cudaFreeHost(void* ptr) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  if (ptr == nullptr) return cudaSuccess;
  return finish(driver().cuMemFreeHost(ptr));
}

cudaError_t CUDARTAPI cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuMemHostRegister(ptr, size, flags));
}

cudaError_t CUDARTAPI cudaHostUnregister(void* ptr) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuMemHostUnregister(ptr));
}

cudaError_t CUDARTAPI cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int flags) {
  if (pDevice == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  CUdeviceptr p = 0;
  CUresult r = driver().cuMemHostGetDevicePointer(&p, pHost, flags);
  if (r == CUDA_SUCCESS) *pDevice = reinterpret_cast<void*>(p);
  return finish(r);
}

}  // extern "C"
