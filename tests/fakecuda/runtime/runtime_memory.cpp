// SPDX-License-Identifier: Apache-2.0
// Linear device memory: cudaMalloc, cudaMallocPitch, cudaMalloc3D, cudaMallocManaged,
// cudaFree, cudaMemGetInfo, cudaPointerGetAttributes.
#include "runtime/runtime_state.h"

using namespace fakecuda::runtime;

namespace {

CUdeviceptr device_pointer(const void* p) {
  return reinterpret_cast<CUdeviceptr>(p);
}

// cudaMallocPitch passes an element size the driver accepts; the pitch does not depend on it.
constexpr unsigned kPitchElementSize = 4;

}  // namespace

extern "C" {

// A zero-byte request succeeds with NULL and creates nothing, as in the real runtime.
cudaError_t CUDARTAPI cudaMalloc(void** devPtr, size_t size) {
  if (devPtr == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  if (size == 0) {
    *devPtr = nullptr;
    return cudaSuccess;
  }
  CUdeviceptr p = 0;
  CUresult r = driver().cuMemAlloc(&p, size);
  if (r == CUDA_SUCCESS) *devPtr = reinterpret_cast<void*>(p);
  return finish(r);
}

cudaError_t CUDARTAPI cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
  if (devPtr == nullptr || pitch == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  CUdeviceptr p = 0;
  CUresult r = driver().cuMemAllocPitch(&p, pitch, width, height, kPitchElementSize);
  if (r == CUDA_SUCCESS) *devPtr = reinterpret_cast<void*>(p);
  return finish(r);
}

// A 3D extent is allocated as width x (height * depth) pitched rows.
cudaError_t CUDARTAPI cudaMalloc3D(struct cudaPitchedPtr* pitchedDevPtr, struct cudaExtent extent) {
  if (pitchedDevPtr == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  size_t rows = (extent.height == 0 ? 1 : extent.height) * (extent.depth == 0 ? 1 : extent.depth);
  CUdeviceptr p = 0;
  size_t pitch = 0;
  CUresult r = driver().cuMemAllocPitch(&p, &pitch, extent.width, rows, kPitchElementSize);
  if (r == CUDA_SUCCESS) {
    *pitchedDevPtr = cudaPitchedPtr{reinterpret_cast<void*>(p), pitch, extent.width, extent.height};
  }
  return finish(r);
}

cudaError_t CUDARTAPI cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  if (devPtr == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  CUdeviceptr p = 0;
  CUresult r = driver().cuMemAllocManaged(&p, size, flags);
  if (r == CUDA_SUCCESS) *devPtr = reinterpret_cast<void*>(p);
  return finish(r);
}

// cudaFree(NULL) is the classic way to create the context; it frees nothing.
cudaError_t CUDARTAPI cudaFree(void* devPtr) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  if (devPtr == nullptr) return cudaSuccess;
  return finish(driver().cuMemFree(device_pointer(devPtr)));
}

cudaError_t CUDARTAPI cudaMemGetInfo(size_t* free, size_t* total) {
  if (free == nullptr || total == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuMemGetInfo(free, total));
}

cudaError_t CUDARTAPI cudaPointerGetAttributes(struct cudaPointerAttributes* attributes,
                                               const void* ptr) {
  if (attributes == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  *attributes = cudaPointerAttributes{};
  CUdeviceptr address = device_pointer(ptr);
  unsigned memory_type = 0;
  if (driver().cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address) !=
      CUDA_SUCCESS) {
    // Memory CUDA does not know is "unregistered", not an error.
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = -2;
    attributes->hostPointer = const_cast<void*>(ptr);
    return cudaSuccess;
  }
  bool managed = false;
  int device = 0;
  driver().cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, address);
  driver().cuPointerGetAttribute(&device, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, address);
  attributes->device = device;
  attributes->devicePointer = const_cast<void*>(ptr);
  if (managed) {
    attributes->type = cudaMemoryTypeManaged;
    attributes->hostPointer = const_cast<void*>(ptr);
  } else if (memory_type == CU_MEMORYTYPE_HOST) {
    attributes->type = cudaMemoryTypeHost;
    attributes->hostPointer = const_cast<void*>(ptr);
  } else {
    attributes->type = cudaMemoryTypeDevice;
  }
  return cudaSuccess;
}

}  // extern "C"
