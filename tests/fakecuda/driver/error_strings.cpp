// SPDX-License-Identifier: Apache-2.0
// cuGetErrorName / cuGetErrorString.
#include "driver/driver_state.h"

namespace {

struct ErrorText {
  CUresult code;
  const char* name;
  const char* description;
};

#define FAKECUDA_ERROR(code, text) \
  { code, #code, text }

constexpr ErrorText kErrors[] = {
    FAKECUDA_ERROR(CUDA_SUCCESS, "no error"),
    FAKECUDA_ERROR(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    FAKECUDA_ERROR(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    FAKECUDA_ERROR(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    FAKECUDA_ERROR(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    FAKECUDA_ERROR(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"),
    FAKECUDA_ERROR(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    FAKECUDA_ERROR(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    FAKECUDA_ERROR(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    FAKECUDA_ERROR(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current"),
    FAKECUDA_ERROR(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped"),
    FAKECUDA_ERROR(CUDA_ERROR_NOT_MAPPED, "resource not mapped"),
    FAKECUDA_ERROR(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    FAKECUDA_ERROR(CUDA_ERROR_ILLEGAL_STATE,
                   "the operation cannot be performed in the present state"),
    FAKECUDA_ERROR(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    FAKECUDA_ERROR(CUDA_ERROR_NOT_READY, "device not ready"),
    FAKECUDA_ERROR(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    FAKECUDA_ERROR(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE,
                   "the primary context for the specified device has already been initialized"),
    FAKECUDA_ERROR(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
    FAKECUDA_ERROR(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                   "part or all of the requested memory range is already mapped"),
    FAKECUDA_ERROR(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
                   "pointer does not correspond to a registered memory region"),
    FAKECUDA_ERROR(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    FAKECUDA_ERROR(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    FAKECUDA_ERROR(CUDA_ERROR_UNKNOWN, "unknown error"),
};

#undef FAKECUDA_ERROR

const ErrorText* find(CUresult error) {
  for (const ErrorText& entry : kErrors) {
    if (entry.code == error) return &entry;
  }
  return nullptr;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* entry = find(error);
  *pStr = entry != nullptr ? entry->name : nullptr;
  return entry != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* entry = find(error);
  *pStr = entry != nullptr ? entry->description : nullptr;
  return entry != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
