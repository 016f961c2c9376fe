// SPDX-License-Identifier: Apache-2.0
// Linear device memory: cuMemAlloc, cuMemAllocPitch, cuMemAllocManaged, cuMemFree and their
// legacy 32-bit ABIs, plus cuMemGetAddressRange.
#include <sys/mman.h>
#include <unistd.h>

#include <limits>

#include "driver/driver_state.h"

using namespace fakecuda;

namespace {

// Legacy (pre-3.2) entry points hand out 32-bit device pointers, so they allocate from a
// dedicated low window instead of the device's range.
enum class Abi { kLegacy, kCurrent };

CUresult allocate(Abi abi, Kind kind, uint64_t bytes, uint64_t* address) {
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* ctx = nullptr;
  if (CUresult r = require_context(s, &ctx); r != CUDA_SUCCESS) return r;
  return abi == Abi::kLegacy ? allocate_legacy_range(s, ctx->device, ctx, kind, bytes, address)
                             : allocate_device_range(s, ctx->device, ctx, kind, bytes, address);
}

CUresult allocate_pitched(Abi abi, uint64_t* address, uint64_t* pitch, uint64_t width,
                          uint64_t height, unsigned element_size) {
  if (element_size != 4 && element_size != 8 && element_size != 16) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (width == 0 || height == 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t row = round_up(width, kDeviceAlignment);
  if (height > std::numeric_limits<uint64_t>::max() / row) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = allocate(abi, Kind::kPitched, row * height, address);
  if (r == CUDA_SUCCESS) *pitch = row;
  return r;
}

CUresult free_device_memory(uint64_t dptr) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  if (dptr == 0) return CUDA_SUCCESS;
  auto it = find_allocation_base(s, dptr);
  if (it == s.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  switch (it->second.kind) {
    case Kind::kDevice:
    case Kind::kPitched:
    case Kind::kManaged:
    case Kind::kStreamOrdered:  // cuMemFree accepts stream-ordered and graph memory too
    case Kind::kGraph:
      release_allocation(s, it);
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

bool fits_32_bits(uint64_t value) {
  return value <= std::numeric_limits<unsigned>::max();
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t address = 0;
  CUresult r = allocate(Abi::kCurrent, Kind::kDevice, bytesize, &address);
  if (r == CUDA_SUCCESS) *dptr = address;
  return r;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t address = 0;
  CUresult r = allocate(Abi::kLegacy, Kind::kDevice, bytesize, &address);
  if (r == CUDA_SUCCESS) *dptr = static_cast<CUdeviceptr_v1>(address);
  return r;
}

CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes,
                                    size_t Height, unsigned int ElementSizeBytes) {
  if (dptr == nullptr || pPitch == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t address = 0;
  uint64_t pitch = 0;
  CUresult r =
      allocate_pitched(Abi::kCurrent, &address, &pitch, WidthInBytes, Height, ElementSizeBytes);
  if (r == CUDA_SUCCESS) {
    *dptr = address;
    *pPitch = pitch;
  }
  return r;
}

CUresult CUDAAPI cuMemAllocPitch(CUdeviceptr_v1* dptr, unsigned int* pPitch,
                                 unsigned int WidthInBytes, unsigned int Height,
                                 unsigned int ElementSizeBytes) {
  if (dptr == nullptr || pPitch == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t address = 0;
  uint64_t pitch = 0;
  CUresult r =
      allocate_pitched(Abi::kLegacy, &address, &pitch, WidthInBytes, Height, ElementSizeBytes);
  if (r == CUDA_SUCCESS) {
    *dptr = static_cast<CUdeviceptr_v1>(address);
    *pPitch = static_cast<unsigned>(pitch);
  }
  return r;
}

CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr) {
  return free_device_memory(dptr);
}
CUresult CUDAAPI cuMemFree(CUdeviceptr_v1 dptr) {
  return free_device_memory(dptr);
}

// Managed memory is real host memory (programs touch it) that also counts on the device.
CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* ctx = nullptr;
  if (CUresult r = require_context(s, &ctx); r != CUDA_SUCCESS) return r;
  DeviceState& d = s.devices[static_cast<size_t>(ctx->device)];
  if (!fits(s, d, bytesize)) return CUDA_ERROR_OUT_OF_MEMORY;
  void* memory = mmap(nullptr, round_up(bytesize, static_cast<uint64_t>(getpagesize())),
                      PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  Allocation allocation;
  allocation.kind = Kind::kManaged;
  allocation.base = reinterpret_cast<uint64_t>(memory);
  allocation.size = bytesize;
  allocation.device = ctx->device;
  allocation.ctx = ctx;
  allocation.flags = flags;
  insert_allocation(s, allocation);
  d.resident += bytesize;
  *dptr = allocation.base;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  const Allocation* allocation = find_allocation_containing(s, dptr);
  if (allocation == nullptr || allocation->kind == Kind::kPinnedHost ||
      allocation->kind == Kind::kHostRegistered) {
    return CUDA_ERROR_NOT_FOUND;
  }
  if (pbase != nullptr) *pbase = allocation->base;
  if (psize != nullptr) *psize = allocation->size;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr_v1* pbase, unsigned int* psize,
                                      CUdeviceptr_v1 dptr) {
  CUdeviceptr base = 0;
  size_t size = 0;
  CUresult r = cuMemGetAddressRange_v2(&base, &size, dptr);
  if (r != CUDA_SUCCESS) return r;
  if (!fits_32_bits(base) || !fits_32_bits(size)) return CUDA_ERROR_NOT_SUPPORTED;
  if (pbase != nullptr) *pbase = static_cast<CUdeviceptr_v1>(base);
  if (psize != nullptr) *psize = static_cast<unsigned>(size);
  return CUDA_SUCCESS;
}

}  // extern "C"
