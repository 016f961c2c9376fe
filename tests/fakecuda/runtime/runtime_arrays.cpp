// SPDX-License-Identifier: Apache-2.0
// CUDA arrays: cudaMallocArray, cudaMalloc3DArray, cudaMallocMipmappedArray and their frees,
// on cuArrayCreate_v2 / cuArray3DCreate_v2 / cuMipmappedArrayCreate.
#include "runtime/runtime_state.h"

using namespace fakecuda::runtime;

namespace {

// A runtime channel descriptor as a driver format and channel count.
bool to_driver_format(const cudaChannelFormatDesc& desc, CUarray_format* format,
                      unsigned* channels) {
  int bits[4] = {desc.x, desc.y, desc.z, desc.w};
  unsigned count = 0;
  while (count < 4 && bits[count] != 0) ++count;
  for (unsigned i = count; i < 4; ++i) {
    if (bits[i] != 0) return false;
  }
  for (unsigned i = 1; i < count; ++i) {
    if (bits[i] != bits[0]) return false;
  }
  if (count == 0 || count == 3) return false;
  *channels = count;
  switch (desc.f) {
    case cudaChannelFormatKindSigned:
      if (bits[0] == 8)
        *format = CU_AD_FORMAT_SIGNED_INT8;
      else if (bits[0] == 16)
        *format = CU_AD_FORMAT_SIGNED_INT16;
      else if (bits[0] == 32)
        *format = CU_AD_FORMAT_SIGNED_INT32;
      else
        return false;
      return true;
    case cudaChannelFormatKindUnsigned:
      if (bits[0] == 8)
        *format = CU_AD_FORMAT_UNSIGNED_INT8;
      else if (bits[0] == 16)
        *format = CU_AD_FORMAT_UNSIGNED_INT16;
      else if (bits[0] == 32)
        *format = CU_AD_FORMAT_UNSIGNED_INT32;
      else
        return false;
      return true;
    case cudaChannelFormatKindFloat:
      if (bits[0] == 16)
        *format = CU_AD_FORMAT_HALF;
      else if (bits[0] == 32)
        *format = CU_AD_FORMAT_FLOAT;
      else
        return false;
      return true;
    default:
      return false;
  }
}

}  // namespace

extern "C" {

struct cudaChannelFormatDesc CUDARTAPI cudaCreateChannelDesc(int x, int y, int z, int w,
                                                             enum cudaChannelFormatKind f) {
  return cudaChannelFormatDesc{x, y, z, w, f};
}

// Without flags a 2D array is cuArrayCreate_v2; flags need the 3D descriptor.
cudaError_t CUDARTAPI cudaMallocArray(cudaArray_t* array, const struct cudaChannelFormatDesc* desc,
                                      size_t width, size_t height, unsigned int flags) {
  if (array == nullptr || desc == nullptr) return record(cudaErrorInvalidValue);
  CUarray_format format;
  unsigned channels = 0;
  if (!to_driver_format(*desc, &format, &channels))
    return record(cudaErrorInvalidChannelDescriptor);
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  CUarray created = nullptr;
  CUresult r;
  if (flags == 0) {
    CUDA_ARRAY_DESCRIPTOR descriptor{width, height, format, channels};
    r = driver().cuArrayCreate(&created, &descriptor);
  } else {
    CUDA_ARRAY3D_DESCRIPTOR descriptor{width, height, 0, format, channels, flags};
    r = driver().cuArray3DCreate(&created, &descriptor);
  }
  if (r == CUDA_SUCCESS) *array = reinterpret_cast<cudaArray_t>(created);
  return finish(r);
}

cudaError_t CUDARTAPI cudaMalloc3DArray(cudaArray_t* array,
                                        const struct cudaChannelFormatDesc* desc,
                                        struct cudaExtent extent, unsigned int flags) {
  if (array == nullptr || desc == nullptr) return record(cudaErrorInvalidValue);
  CUarray_format format;
  unsigned channels = 0;
  if (!to_driver_format(*desc, &format, &channels))
    return record(cudaErrorInvalidChannelDescriptor);
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  CUDA_ARRAY3D_DESCRIPTOR descriptor{extent.width, extent.height, extent.depth,
                                     format,       channels,      flags};
  CUarray created = nullptr;
  CUresult r = driver().cuArray3DCreate(&created, &descriptor);
  if (r == CUDA_SUCCESS) *array = reinterpret_cast<cudaArray_t>(created);
  return finish(r);
}

cudaError_t CUDARTAPI cudaFreeArray(cudaArray_t array) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  if (array == nullptr) return cudaSuccess;
  return finish(driver().cuArrayDestroy(reinterpret_cast<CUarray>(array)));
}

cudaError_t CUDARTAPI cudaMallocMipmappedArray(cudaMipmappedArray_t* mipmappedArray,
                                               const struct cudaChannelFormatDesc* desc,
                                               struct cudaExtent extent, unsigned int numLevels,
                                               unsigned int flags) {
  if (mipmappedArray == nullptr || desc == nullptr) return record(cudaErrorInvalidValue);
  CUarray_format format;
  unsigned channels = 0;
  if (!to_driver_format(*desc, &format, &channels))
    return record(cudaErrorInvalidChannelDescriptor);
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  CUDA_ARRAY3D_DESCRIPTOR descriptor{extent.width, extent.height, extent.depth,
                                     format,       channels,      flags};
  CUmipmappedArray created = nullptr;
  CUresult r = driver().cuMipmappedArrayCreate(&created, &descriptor, numLevels);
  if (r == CUDA_SUCCESS) *mipmappedArray = reinterpret_cast<cudaMipmappedArray_t>(created);
  return finish(r);
}

cudaError_t CUDARTAPI cudaFreeMipmappedArray(cudaMipmappedArray_t mipmappedArray) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  if (mipmappedArray == nullptr) return cudaSuccess;
  return finish(
      driver().cuMipmappedArrayDestroy(reinterpret_cast<CUmipmappedArray>(mipmappedArray)));
}

}  // extern "C"
