// SPDX-License-Identifier: Apache-2.0
// Page-locked host memory: cuMemHostAlloc/cuMemAllocHost (real host memory from mmap, since
// programs touch it) and cuMemHostRegister (the caller's memory). Neither counts on the device.
#include <sys/mman.h>
#include <unistd.h>

#include <limits>

#include "driver/driver_state.h"

using namespace fakecuda;

namespace {

constexpr unsigned kHostAllocFlags =
    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
constexpr unsigned kHostRegisterFlags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                                        CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;

uint64_t page_size() {
  return static_cast<uint64_t>(getpagesize());
}

bool is_host_kind(Kind kind) {
  return kind == Kind::kPinnedHost || kind == Kind::kHostRegistered || kind == Kind::kManaged;
}

// Live allocations never overlap, so only the last one starting before `end` can reach
// [begin, end).
bool overlaps_live_allocation(State& s, uint64_t begin, uint64_t end) {
  auto it = s.allocations.lower_bound(end);
  if (it == s.allocations.begin()) return false;
  --it;
  return it->second.base + it->second.size > begin;
}

CUresult host_alloc(void** pp, size_t bytesize, unsigned int flags) {
  if (pp == nullptr || bytesize == 0 || (flags & ~kHostAllocFlags) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* ctx = nullptr;
  if (CUresult r = require_context(s, &ctx); r != CUDA_SUCCESS) return r;
  void* memory = mmap(nullptr, round_up(bytesize, page_size()), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  Allocation allocation;
  allocation.kind = Kind::kPinnedHost;
  allocation.base = reinterpret_cast<uint64_t>(memory);
  allocation.size = bytesize;
  allocation.device = ctx->device;
  allocation.ctx = ctx;
  allocation.flags = flags;
  insert_allocation(s, allocation);
  *pp = memory;
  return CUDA_SUCCESS;
}

CUresult host_register(void* p, size_t bytesize, unsigned int flags) {
  if (p == nullptr || bytesize == 0 || (flags & ~kHostRegisterFlags) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* ctx = nullptr;
  if (CUresult r = require_context(s, &ctx); r != CUDA_SUCCESS) return r;
  uint64_t begin = reinterpret_cast<uint64_t>(p);
  if (overlaps_live_allocation(s, begin, begin + bytesize)) {
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  Allocation allocation;
  allocation.kind = Kind::kHostRegistered;
  allocation.base = begin;
  allocation.size = bytesize;
  allocation.device = ctx->device;
  allocation.ctx = ctx;
  allocation.flags = flags;
  insert_allocation(s, allocation);
  return CUDA_SUCCESS;
}

// With unified addressing the device pointer of mapped host memory is the host pointer.
CUresult host_device_pointer(uint64_t* device_pointer, void* p, unsigned int flags) {
  if (device_pointer == nullptr || p == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  const Allocation* allocation = find_allocation_containing(s, reinterpret_cast<uint64_t>(p));
  if (allocation == nullptr || !is_host_kind(allocation->kind)) return CUDA_ERROR_INVALID_VALUE;
  *device_pointer = reinterpret_cast<uint64_t>(p);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  return host_alloc(pp, bytesize, Flags);
}

CUresult CUDAAPI cuMemAllocHost_v2(void** pp, size_t bytesize) {
  return host_alloc(pp, bytesize, 0);
}

CUresult CUDAAPI cuMemAllocHost(void** pp, unsigned int bytesize) {
  return host_alloc(pp, bytesize, 0);
}

CUresult CUDAAPI cuMemFreeHost(void* p) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  auto it = find_allocation_base(s, reinterpret_cast<uint64_t>(p));
  if (it == s.allocations.end() || it->second.kind != Kind::kPinnedHost) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  release_allocation(s, it);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags) {
  return host_register(p, bytesize, Flags);
}

CUresult CUDAAPI cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
  return host_register(p, bytesize, Flags);
}

CUresult CUDAAPI cuMemHostUnregister(void* p) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  auto it = find_allocation_base(s, reinterpret_cast<uint64_t>(p));
  if (it == s.allocations.end() || it->second.kind != Kind::kHostRegistered) {
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  }
  release_allocation(s, it);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p, unsigned int Flags) {
  uint64_t address = 0;
  CUresult r = host_device_pointer(&address, p, Flags);
  if (r == CUDA_SUCCESS) *pdptr = address;
  return r;
}

// Host addresses rarely fit the 32-bit ABI; the fake refuses rather than truncate.
CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr_v1* pdptr, void* p, unsigned int Flags) {
  uint64_t address = 0;
  CUresult r = host_device_pointer(&address, p, Flags);
  if (r != CUDA_SUCCESS) return r;
  if (address > std::numeric_limits<unsigned>::max()) return CUDA_ERROR_NOT_SUPPORTED;
  *pdptr = static_cast<CUdeviceptr_v1>(address);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostGetFlags(unsigned int* pFlags, void* p) {
  if (pFlags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  const Allocation* allocation = find_allocation_containing(s, reinterpret_cast<uint64_t>(p));
  if (allocation == nullptr || allocation->kind != Kind::kPinnedHost) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pFlags = allocation->flags;
  return CUDA_SUCCESS;
}

}  // extern "C"
