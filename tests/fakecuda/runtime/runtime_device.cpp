// SPDX-License-Identifier: Apache-2.0
// Device management and versions.
#include "runtime/runtime_state.h"

using namespace fakecuda::runtime;

extern "C" {

cudaError_t CUDARTAPI cudaGetDeviceCount(int* count) {
  if (count == nullptr) return record(cudaErrorInvalidValue);
  *count = 0;
  if (cudaError_t e = load_driver(); e != cudaSuccess) return record(e);
  return finish(driver().cuDeviceGetCount(count));
}

cudaError_t CUDARTAPI cudaSetDevice(int device) {
  return record(set_current_device(device));
}

cudaError_t CUDARTAPI cudaGetDevice(int* device) {
  if (device == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = load_driver(); e != cudaSuccess) return record(e);
  *device = current_device();
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceReset(void) {
  return record(reset_current_device());
}

cudaError_t CUDARTAPI cudaDeviceSynchronize(void) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuCtxSynchronize(nullptr));
}

// Without a driver the version is 0 and the call still succeeds (documented).
cudaError_t CUDARTAPI cudaDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return record(cudaErrorInvalidValue);
  *driverVersion = 0;
  if (load_driver() != cudaSuccess) return cudaSuccess;
  return finish(driver().cuDriverGetVersion(driverVersion));
}

cudaError_t CUDARTAPI cudaRuntimeGetVersion(int* runtimeVersion) {
  if (runtimeVersion == nullptr) return record(cudaErrorInvalidValue);
  *runtimeVersion = CUDART_VERSION;
  return cudaSuccess;
}

}  // extern "C"
