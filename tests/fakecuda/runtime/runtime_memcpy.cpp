// SPDX-License-Identifier: Apache-2.0
// cudaMemcpy and cudaMemset (and their per-thread-stream _ptds flavours), on top of the
// driver's cuMemcpy*/cuMemsetD8, which only validate device ranges.
#include <cstring>

#include "runtime/runtime_state.h"

using namespace fakecuda::runtime;

namespace {

enum class Stream { kLegacy, kPerThread };

// Whether the driver treats `p` as device-side memory (unknown pointers are pageable host).
bool is_device_side(const void* p) {
  unsigned memory_type = 0;
  return driver().cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                        reinterpret_cast<CUdeviceptr>(p)) == CUDA_SUCCESS &&
         memory_type == CU_MEMORYTYPE_DEVICE;
}

cudaError_t copy(Stream stream, void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  if (count == 0) return cudaSuccess;
  if (kind == cudaMemcpyDefault) {
    bool dst_device = is_device_side(dst);
    bool src_device = is_device_side(src);
    kind = dst_device ? (src_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                      : (src_device ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  }
  const DriverEntryPoints& d = driver();
  bool per_thread = stream == Stream::kPerThread;
  auto dptr = [](const void* p) { return reinterpret_cast<CUdeviceptr>(p); };
  switch (kind) {
    case cudaMemcpyHostToHost:
      std::memmove(dst, src, count);
      return cudaSuccess;
    case cudaMemcpyHostToDevice:
      return finish((per_thread ? d.cuMemcpyHtoD_ptds : d.cuMemcpyHtoD)(dptr(dst), src, count));
    case cudaMemcpyDeviceToHost:
      return finish((per_thread ? d.cuMemcpyDtoH_ptds : d.cuMemcpyDtoH)(dst, dptr(src), count));
    case cudaMemcpyDeviceToDevice:
      return finish(
          (per_thread ? d.cuMemcpyDtoD_ptds : d.cuMemcpyDtoD)(dptr(dst), dptr(src), count));
    default:
      return record(cudaErrorInvalidMemcpyDirection);
  }
}

cudaError_t set(Stream stream, void* devPtr, int value, size_t count) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  const DriverEntryPoints& d = driver();
  auto function = stream == Stream::kPerThread ? d.cuMemsetD8_ptds : d.cuMemsetD8;
  return finish(
      function(reinterpret_cast<CUdeviceptr>(devPtr), static_cast<unsigned char>(value), count));
}

}  // namespace

extern "C" {

cudaError_t CUDARTAPI cudaMemcpy(void* dst, const void* src, size_t count,
                                 enum cudaMemcpyKind kind) {
  return copy(Stream::kLegacy, dst, src, count, kind);
}

cudaError_t CUDARTAPI cudaMemcpy_ptds(void* dst, const void* src, size_t count,
                                      enum cudaMemcpyKind kind) {
  return copy(Stream::kPerThread, dst, src, count, kind);
}

cudaError_t CUDARTAPI cudaMemset(void* devPtr, int value, size_t count) {
  return set(Stream::kLegacy, devPtr, value, count);
}

cudaError_t CUDARTAPI cudaMemset_ptds(void* devPtr, int value, size_t count) {
  return set(Stream::kPerThread, devPtr, value, count);
}

}  // extern "C"
