// SPDX-License-Identifier: Apache-2.0
// cuMemcpyHtoD/DtoH/DtoD and cuMemsetD8: device memory has no contents in the fake, so these
// only check that the device range is live. Where real host memory backs the "device" side
// (managed, pinned or registered memory), the bytes really move; reads of pure device memory
// produce zeros.
#include <cstring>

#include "driver/driver_state.h"

using namespace fakecuda;

namespace {

enum class Backing { kNone, kHost };

// The whole range must lie inside one live allocation or mapping.
CUresult check_range(State& s, uint64_t address, uint64_t bytes, Backing* backing) {
  PointerInfo info;
  if (!describe_pointer(s, address, &info)) return CUDA_ERROR_INVALID_VALUE;
  if (bytes > info.size - (address - info.base)) return CUDA_ERROR_INVALID_VALUE;
  *backing = info.host_backed ? Backing::kHost : Backing::kNone;
  return CUDA_SUCCESS;
}

CUresult host_to_device(uint64_t dst, const void* src, size_t bytes) {
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* ctx = nullptr;
  if (CUresult r = require_context(s, &ctx); r != CUDA_SUCCESS) return r;
  if (bytes == 0) return CUDA_SUCCESS;
  if (src == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Backing backing;
  if (CUresult r = check_range(s, dst, bytes, &backing); r != CUDA_SUCCESS) return r;
  if (backing == Backing::kHost) std::memmove(reinterpret_cast<void*>(dst), src, bytes);
  return CUDA_SUCCESS;
}

CUresult device_to_host(void* dst, uint64_t src, size_t bytes) {
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* ctx = nullptr;
  if (CUresult r = require_context(s, &ctx); r != CUDA_SUCCESS) return r;
  if (bytes == 0) return CUDA_SUCCESS;
  if (dst == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Backing backing;
  if (CUresult r = check_range(s, src, bytes, &backing); r != CUDA_SUCCESS) return r;
  if (backing == Backing::kHost) {
    std::memmove(dst, reinterpret_cast<const void*>(src), bytes);
  } else {
    std::memset(dst, 0, bytes);
  }
  return CUDA_SUCCESS;
}

CUresult device_to_device(uint64_t dst, uint64_t src, size_t bytes) {
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* ctx = nullptr;
  if (CUresult r = require_context(s, &ctx); r != CUDA_SUCCESS) return r;
  if (bytes == 0) return CUDA_SUCCESS;
  Backing dst_backing;
  Backing src_backing;
  if (CUresult r = check_range(s, dst, bytes, &dst_backing); r != CUDA_SUCCESS) return r;
  if (CUresult r = check_range(s, src, bytes, &src_backing); r != CUDA_SUCCESS) return r;
  if (dst_backing == Backing::kHost) {
    if (src_backing == Backing::kHost) {
      std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
    } else {
      std::memset(reinterpret_cast<void*>(dst), 0, bytes);
    }
  }
  return CUDA_SUCCESS;
}

CUresult memset_d8(uint64_t dst, unsigned char value, size_t count) {
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* ctx = nullptr;
  if (CUresult r = require_context(s, &ctx); r != CUDA_SUCCESS) return r;
  if (count == 0) return CUDA_SUCCESS;
  Backing backing;
  if (CUresult r = check_range(s, dst, count, &backing); r != CUDA_SUCCESS) return r;
  if (backing == Backing::kHost) std::memset(reinterpret_cast<void*>(dst), value, count);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  return host_to_device(dstDevice, srcHost, ByteCount);
}
CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost,
                                      size_t ByteCount) {
  return host_to_device(dstDevice, srcHost, ByteCount);
}
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr_v1 dstDevice, const void* srcHost,
                              unsigned int ByteCount) {
  return host_to_device(dstDevice, srcHost, ByteCount);
}

CUresult CUDAAPI cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  return device_to_host(dstHost, srcDevice, ByteCount);
}
CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  return device_to_host(dstHost, srcDevice, ByteCount);
}
CUresult CUDAAPI cuMemcpyDtoH(void* dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount) {
  return device_to_host(dstHost, srcDevice, ByteCount);
}

CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  return device_to_device(dstDevice, srcDevice, ByteCount);
}
CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                      size_t ByteCount) {
  return device_to_device(dstDevice, srcDevice, ByteCount);
}
CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice,
                              unsigned int ByteCount) {
  return device_to_device(dstDevice, srcDevice, ByteCount);
}

CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return memset_d8(dstDevice, uc, N);
}
CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return memset_d8(dstDevice, uc, N);
}
CUresult CUDAAPI cuMemsetD8(CUdeviceptr_v1 dstDevice, unsigned char uc, unsigned int N) {
  return memset_d8(dstDevice, uc, N);
}

}  // extern "C"
