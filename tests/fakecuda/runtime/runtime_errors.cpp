// SPDX-License-Identifier: Apache-2.0
// Driver-to-runtime error translation, cudaGetErrorName/String, cudaGetLastError.
#include "runtime/runtime_state.h"

namespace fakecuda::runtime {

cudaError_t translate(CUresult result) {
  switch (result) {
    case CUDA_SUCCESS:
      return cudaSuccess;
    case CUDA_ERROR_INVALID_VALUE:
      return cudaErrorInvalidValue;
    case CUDA_ERROR_OUT_OF_MEMORY:
      return cudaErrorMemoryAllocation;
    case CUDA_ERROR_NOT_INITIALIZED:
      return cudaErrorInitializationError;
    case CUDA_ERROR_DEINITIALIZED:
      return cudaErrorCudartUnloading;
    case CUDA_ERROR_NO_DEVICE:
      return cudaErrorNoDevice;
    case CUDA_ERROR_INVALID_DEVICE:
      return cudaErrorInvalidDevice;
    case CUDA_ERROR_INVALID_CONTEXT:
      return cudaErrorDeviceUninitialized;
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return cudaErrorContextIsDestroyed;
    case CUDA_ERROR_ALREADY_MAPPED:
      return cudaErrorAlreadyMapped;
    case CUDA_ERROR_NOT_MAPPED:
      return cudaErrorNotMapped;
    case CUDA_ERROR_INVALID_HANDLE:
      return cudaErrorInvalidResourceHandle;
    case CUDA_ERROR_ILLEGAL_STATE:
      return cudaErrorIllegalState;
    case CUDA_ERROR_NOT_FOUND:
      return cudaErrorSymbolNotFound;
    case CUDA_ERROR_NOT_READY:
      return cudaErrorNotReady;
    case CUDA_ERROR_ILLEGAL_ADDRESS:
      return cudaErrorIllegalAddress;
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
      return cudaErrorHostMemoryAlreadyRegistered;
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
      return cudaErrorHostMemoryNotRegistered;
    case CUDA_ERROR_NOT_PERMITTED:
      return cudaErrorNotPermitted;
    case CUDA_ERROR_NOT_SUPPORTED:
      return cudaErrorNotSupported;
    case CUDA_ERROR_STUB_LIBRARY:
      return cudaErrorStubLibrary;
    default:
      return cudaErrorUnknown;
  }
}

}  // namespace fakecuda::runtime

namespace {

struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* description;
};

#define FAKECUDA_ERROR(code, text) \
  { code, #code, text }

constexpr ErrorText kErrors[] = {
    FAKECUDA_ERROR(cudaSuccess, "no error"),
    FAKECUDA_ERROR(cudaErrorInvalidValue, "invalid argument"),
    FAKECUDA_ERROR(cudaErrorMemoryAllocation, "out of memory"),
    FAKECUDA_ERROR(cudaErrorInitializationError, "initialization error"),
    FAKECUDA_ERROR(cudaErrorCudartUnloading, "driver shutting down"),
    FAKECUDA_ERROR(cudaErrorInvalidPitchValue, "invalid pitch argument"),
    FAKECUDA_ERROR(cudaErrorInvalidDevicePointer, "invalid device pointer"),
    FAKECUDA_ERROR(cudaErrorInvalidChannelDescriptor, "invalid channel descriptor"),
    FAKECUDA_ERROR(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy"),
    FAKECUDA_ERROR(cudaErrorStubLibrary, "CUDA driver is a stub library"),
    FAKECUDA_ERROR(cudaErrorInsufficientDriver,
                   "CUDA driver version is insufficient for CUDA runtime version"),
    FAKECUDA_ERROR(cudaErrorNoDevice, "no CUDA-capable device is detected"),
    FAKECUDA_ERROR(cudaErrorInvalidDevice, "invalid device ordinal"),
    FAKECUDA_ERROR(cudaErrorDeviceUninitialized, "invalid device context"),
    FAKECUDA_ERROR(cudaErrorAlreadyMapped, "resource already mapped"),
    FAKECUDA_ERROR(cudaErrorNotMapped, "resource not mapped"),
    FAKECUDA_ERROR(cudaErrorInvalidResourceHandle, "invalid resource handle"),
    FAKECUDA_ERROR(cudaErrorIllegalState, "the operation cannot be performed in the present state"),
    FAKECUDA_ERROR(cudaErrorSymbolNotFound, "named symbol not found"),
    FAKECUDA_ERROR(cudaErrorNotReady, "device not ready"),
    FAKECUDA_ERROR(cudaErrorIllegalAddress, "an illegal memory access was encountered"),
    FAKECUDA_ERROR(cudaErrorContextIsDestroyed, "context is destroyed"),
    FAKECUDA_ERROR(cudaErrorHostMemoryAlreadyRegistered,
                   "part or all of the requested memory range is already mapped"),
    FAKECUDA_ERROR(cudaErrorHostMemoryNotRegistered,
                   "pointer does not correspond to a registered memory region"),
    FAKECUDA_ERROR(cudaErrorNotPermitted, "operation not permitted"),
    FAKECUDA_ERROR(cudaErrorNotSupported, "operation not supported"),
    FAKECUDA_ERROR(cudaErrorUnknown, "unknown error"),
};

#undef FAKECUDA_ERROR

const ErrorText* find(cudaError_t error) {
  for (const ErrorText& entry : kErrors) {
    if (entry.code == error) return &entry;
  }
  return nullptr;
}

}  // namespace

extern "C" {

const char* CUDARTAPI cudaGetErrorName(cudaError_t error) {
  const ErrorText* entry = find(error);
  return entry != nullptr ? entry->name : "cudaErrorUnknown";
}

const char* CUDARTAPI cudaGetErrorString(cudaError_t error) {
  const ErrorText* entry = find(error);
  return entry != nullptr ? entry->description : "unrecognized error code";
}

cudaError_t CUDARTAPI cudaGetLastError(void) {
  return fakecuda::runtime::take_last_error();
}

cudaError_t CUDARTAPI cudaPeekAtLastError(void) {
  return fakecuda::runtime::peek_last_error();
}

}  // extern "C"
