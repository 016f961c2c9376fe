// SPDX-License-Identifier: Apache-2.0
// cudaGetDriverEntryPoint (cudaVersion 12000) and cudaGetDriverEntryPointByVersion: forwarded
// to the driver's cuGetProcAddress_v2, which is how PyTorch and NCCL reach cuMemCreate & co.
#include "runtime/runtime_state.h"

using namespace fakecuda::runtime;

namespace {

constexpr unsigned kEntryPointVersion = 12000;

// cudaEnableDefault means per-thread streams in the _ptsz flavour (code built with
// --default-stream per-thread), legacy streams otherwise; the other flags match the driver's.
cudaError_t entry_point(const char* symbol, void** funcPtr, unsigned int cudaVersion,
                        unsigned long long flags, bool per_thread_default,
                        cudaDriverEntryPointQueryResult* driverStatus) {
  if (symbol == nullptr || funcPtr == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = load_driver(); e != cudaSuccess) return record(e);
  cuuint64_t driver_flags = flags;
  if (flags == cudaEnableDefault && per_thread_default) {
    driver_flags = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  }
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = driver().cuGetProcAddress(symbol, funcPtr, static_cast<int>(cudaVersion),
                                         driver_flags, &status);
  if (r == CUDA_SUCCESS && driverStatus != nullptr) {
    *driverStatus = static_cast<cudaDriverEntryPointQueryResult>(status);
  }
  return finish(r);
}

}  // namespace

extern "C" {

cudaError_t CUDARTAPI cudaGetDriverEntryPoint(const char* symbol, void** funcPtr,
                                              unsigned long long flags,
                                              enum cudaDriverEntryPointQueryResult* driverStatus) {
  return entry_point(symbol, funcPtr, kEntryPointVersion, flags, false, driverStatus);
}

cudaError_t CUDARTAPI
cudaGetDriverEntryPoint_ptsz(const char* symbol, void** funcPtr, unsigned long long flags,
                             enum cudaDriverEntryPointQueryResult* driverStatus) {
  return entry_point(symbol, funcPtr, kEntryPointVersion, flags, true, driverStatus);
}

cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion(
    const char* symbol, void** funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult* driverStatus) {
  return entry_point(symbol, funcPtr, cudaVersion, flags, false, driverStatus);
}

cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion_ptsz(
    const char* symbol, void** funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult* driverStatus) {
  return entry_point(symbol, funcPtr, cudaVersion, flags, true, driverStatus);
}

}  // extern "C"
