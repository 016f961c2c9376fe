// SPDX-License-Identifier: Apache-2.0
// CUDA arrays and mipmapped arrays: opaque handles whose bytes count on the device of the
// context that created them (they have no device pointer).
#include <set>

#include "driver/driver_state.h"

struct CUarray_st {
  int device = 0;
  CUctx_st* ctx = nullptr;
  uint64_t bytes = 0;
};

struct CUmipmappedArray_st {
  int device = 0;
  CUctx_st* ctx = nullptr;
  uint64_t bytes = 0;
};

using namespace fakecuda;

namespace {

// Guarded by the driver lock.
struct ArrayState {
  std::set<CUarray_st*> arrays;
  std::set<CUmipmappedArray_st*> mipmapped;
};

ArrayState& arrays() {
  static auto* instance = new ArrayState;
  return *instance;
}

// Bytes per channel element; 0 for formats the fake does not model (block-compressed, video).
uint64_t element_bytes(CUarray_format format) {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1:
      return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1:
      return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2:
    case CU_AD_FORMAT_UNORM_INT_101010_2:
      return 4;
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X4:
      return 8;
    default:
      return 0;
  }
}

// Bytes of one level; 0 for an invalid descriptor. Height and depth 0 mean 1D / 2D.
uint64_t level_bytes(uint64_t width, uint64_t height, uint64_t depth, CUarray_format format,
                     unsigned channels) {
  uint64_t element = element_bytes(format);
  if (width == 0 || element == 0 || (channels != 1 && channels != 2 && channels != 4)) return 0;
  unsigned __int128 bytes = static_cast<unsigned __int128>(width) * (height == 0 ? 1 : height) *
                            (depth == 0 ? 1 : depth) * element * channels;
  return bytes > (~0ull) ? 0 : static_cast<uint64_t>(bytes);
}

// Counts `bytes` on the current context's device.
CUresult charge(State& s, uint64_t bytes, CUctx_st** owner) {
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = require_context(s, &ctx); r != CUDA_SUCCESS) return r;
  DeviceState& d = s.devices[static_cast<size_t>(ctx->device)];
  if (!fits(s, d, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  d.resident += bytes;
  *owner = ctx;
  return CUDA_SUCCESS;
}

CUresult create_array(CUarray* pHandle, uint64_t bytes) {
  if (pHandle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* ctx = nullptr;
  if (CUresult r = charge(s, bytes, &ctx); r != CUDA_SUCCESS) return r;
  auto* array = new CUarray_st{ctx->device, ctx, bytes};
  arrays().arrays.insert(array);
  *pHandle = array;
  return CUDA_SUCCESS;
}

void uncharge(State& s, int device, uint64_t bytes) {
  s.devices[static_cast<size_t>(device)].resident -= bytes;
}

}  // namespace

namespace fakecuda {

void destroy_context_arrays(State& s, CUctx_st* ctx) {
  auto& live = arrays();
  for (auto it = live.arrays.begin(); it != live.arrays.end();) {
    if ((*it)->ctx != ctx) {
      ++it;
      continue;
    }
    uncharge(s, (*it)->device, (*it)->bytes);
    delete *it;
    it = live.arrays.erase(it);
  }
  for (auto it = live.mipmapped.begin(); it != live.mipmapped.end();) {
    if ((*it)->ctx != ctx) {
      ++it;
      continue;
    }
    uncharge(s, (*it)->device, (*it)->bytes);
    delete *it;
    it = live.mipmapped.erase(it);
  }
}

}  // namespace fakecuda

extern "C" {

CUresult CUDAAPI cuArrayCreate_v2(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR* pAllocateArray) {
  if (pAllocateArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_ARRAY_DESCRIPTOR& d = *pAllocateArray;
  return create_array(pHandle, level_bytes(d.Width, d.Height, 0, d.Format, d.NumChannels));
}

CUresult CUDAAPI cuArrayCreate(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR_v1* pAllocateArray) {
  if (pAllocateArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_ARRAY_DESCRIPTOR_v1& d = *pAllocateArray;
  return create_array(pHandle, level_bytes(d.Width, d.Height, 0, d.Format, d.NumChannels));
}

CUresult CUDAAPI cuArray3DCreate_v2(CUarray* pHandle,
                                    const CUDA_ARRAY3D_DESCRIPTOR* pAllocateArray) {
  if (pAllocateArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_ARRAY3D_DESCRIPTOR& d = *pAllocateArray;
  return create_array(pHandle, level_bytes(d.Width, d.Height, d.Depth, d.Format, d.NumChannels));
}

CUresult CUDAAPI cuArray3DCreate(CUarray* pHandle,
                                 const CUDA_ARRAY3D_DESCRIPTOR_v1* pAllocateArray) {
  if (pAllocateArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_ARRAY3D_DESCRIPTOR_v1& d = *pAllocateArray;
  return create_array(pHandle, level_bytes(d.Width, d.Height, d.Depth, d.Format, d.NumChannels));
}

CUresult CUDAAPI cuArrayDestroy(CUarray hArray) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  if (arrays().arrays.erase(hArray) == 0) return CUDA_ERROR_INVALID_HANDLE;
  uncharge(s, hArray->device, hArray->bytes);
  delete hArray;
  return CUDA_SUCCESS;
}

// Level l has each non-zero extent halved l times (at least 1).
CUresult CUDAAPI cuMipmappedArrayCreate(CUmipmappedArray* pHandle,
                                        const CUDA_ARRAY3D_DESCRIPTOR* pMipmappedArrayDesc,
                                        unsigned int numMipmapLevels) {
  if (pHandle == nullptr || pMipmappedArrayDesc == nullptr || numMipmapLevels == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const CUDA_ARRAY3D_DESCRIPTOR& d = *pMipmappedArrayDesc;
  auto halve = [](uint64_t extent, unsigned level) -> uint64_t {
    if (extent == 0) return 0;
    uint64_t shifted = level >= 64 ? 0 : extent >> level;
    return shifted == 0 ? 1 : shifted;
  };
  uint64_t bytes = 0;
  for (unsigned level = 0; level < numMipmapLevels; ++level) {
    uint64_t level_size = level_bytes(halve(d.Width, level), halve(d.Height, level),
                                      halve(d.Depth, level), d.Format, d.NumChannels);
    if (level_size == 0) return CUDA_ERROR_INVALID_VALUE;
    bytes += level_size;
  }
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* ctx = nullptr;
  if (CUresult r = charge(s, bytes, &ctx); r != CUDA_SUCCESS) return r;
  auto* array = new CUmipmappedArray_st{ctx->device, ctx, bytes};
  arrays().mipmapped.insert(array);
  *pHandle = array;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  if (arrays().mipmapped.erase(hMipmappedArray) == 0) return CUDA_ERROR_INVALID_HANDLE;
  uncharge(s, hMipmappedArray->device, hMipmappedArray->bytes);
  delete hMipmappedArray;
  return CUDA_SUCCESS;
}

}  // extern "C"
