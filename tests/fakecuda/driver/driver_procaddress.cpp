// SPDX-License-Identifier: Apache-2.0
// cuGetProcAddress in both ABIs: the 4-argument one (CUDA 11.3) and cuGetProcAddress_v2
// (CUDA 12.0, with a status out-parameter). Everything cudart, cuBLAS, NCCL, JAX... call
// reaches the driver through here, so this is the path an interposer must wrap.
#include <cstring>

#include "driver/driver_state.h"
#include "driver/procaddress_table.h"

using namespace fakecuda;

namespace {

// The newest ABI introduced at or before `cudaVersion`. An unknown name and a version older
// than the first ABI both answer CUDA_SUCCESS with a NULL pointer (measured on a real driver;
// the status tells them apart).
CUresult lookup(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (flags != CU_GET_PROC_ADDRESS_DEFAULT && flags != CU_GET_PROC_ADDRESS_LEGACY_STREAM &&
      flags != CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Documented: asking for a version newer than the driver is an error.
  if (cudaVersion > kDriverVersion) return CUDA_ERROR_INVALID_VALUE;
  const ProcAddressEntry* best = nullptr;
  bool known = false;
  for (const ProcAddressEntry& entry : procaddress_table()) {
    if (std::strcmp(entry.name, symbol) != 0) continue;
    known = true;
    if (entry.version <= cudaVersion && (best == nullptr || entry.version > best->version)) {
      best = &entry;
    }
  }
  *pfn = nullptr;
  CUdriverProcAddressQueryResult result = CU_GET_PROC_ADDRESS_SUCCESS;
  if (best == nullptr) {
    result =
        known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  } else if (flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM && best->per_thread) {
    *pfn = best->per_thread;
  } else {
    *pfn = best->function;
  }
  if (status != nullptr) *status = result;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                     cuuint64_t flags,
                                     CUdriverProcAddressQueryResult* symbolStatus) {
  return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                  cuuint64_t flags) {
  return lookup(symbol, pfn, cudaVersion, flags, nullptr);
}

}  // extern "C"
