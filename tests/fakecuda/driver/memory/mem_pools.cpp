// SPDX-License-Identifier: Apache-2.0
// Stream-ordered memory pools: cuMemPoolCreate/Destroy/TrimTo/Get/SetAttribute and the default
// and current pool of each device.
//
// A pool's reserved bytes are what occupy the device. Freed memory stays reserved up to the
// release threshold (0 by default); the fake releases at the free instead of at the next
// synchronization, which is the same as far as anything outside the pool can tell.
#include <algorithm>

#include "driver/driver_state.h"

using namespace fakecuda;

namespace {

void shrink_reserved(State& s, CUmemPoolHandle_st* pool, uint64_t target) {
  if (pool->reserved <= target) return;
  s.devices[static_cast<size_t>(pool->device)].resident -= pool->reserved - target;
  pool->reserved = target;
}

void delete_pool(State& s, CUmemPoolHandle_st* pool) {
  shrink_reserved(s, pool, 0);
  s.pools.erase(pool);
  delete pool;
}

CUresult validate_device_location(const State& s, const CUmemLocation* location,
                                  CUmemAllocationType type) {
  if (location == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  if (location->type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_NOT_SUPPORTED;
  return require_device(s, location->id);
}

}  // namespace

namespace fakecuda {

bool is_live_pool(const State& s, CUmemoryPool pool) {
  return pool != nullptr && s.pools.count(pool) != 0 && !pool->destroyed;
}

CUmemPoolHandle_st* create_pool(State& s, int device, bool is_default, uint64_t max_size) {
  auto* pool = new CUmemPoolHandle_st;
  pool->device = device;
  pool->is_default = is_default;
  pool->max_size = max_size;
  s.pools.insert(pool);
  return pool;
}

void pool_release_bytes(State& s, CUmemPoolHandle_st* pool, uint64_t bytes) {
  pool->used -= bytes;
  pool->live_allocations -= 1;
  if (pool->destroyed && pool->live_allocations == 0) {
    delete_pool(s, pool);
    return;
  }
  shrink_reserved(s, pool, std::max(pool->used, pool->release_threshold));
}

CUresult pool_allocate(State& s, CUmemPoolHandle_st* pool, CUctx_st* ctx, uint64_t bytes,
                       uint64_t* address) {
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  DeviceState& d = s.devices[static_cast<size_t>(pool->device)];
  uint64_t used = pool->used + bytes;
  uint64_t grow = used > pool->reserved ? used - pool->reserved : 0;
  if (pool->max_size != 0 && pool->reserved + grow > pool->max_size) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (!fits(s, d, grow)) return CUDA_ERROR_OUT_OF_MEMORY;
  uint64_t span = round_up(bytes, kDeviceAlignment);
  std::optional<uint64_t> base = d.space->allocate(span, kDeviceAlignment);
  if (!base) return CUDA_ERROR_OUT_OF_MEMORY;
  pool->reserved += grow;
  d.resident += grow;
  pool->used = used;
  pool->used_high = std::max(pool->used_high, pool->used);
  pool->reserved_high = std::max(pool->reserved_high, pool->reserved);
  pool->live_allocations += 1;
  Allocation allocation;
  allocation.kind = Kind::kStreamOrdered;
  allocation.base = *base;
  allocation.size = bytes;
  allocation.span = span;
  allocation.space = d.space.get();
  allocation.device = pool->device;
  allocation.ctx = ctx;
  allocation.pool = pool;
  insert_allocation(s, allocation);
  *address = *base;
  return CUDA_SUCCESS;
}

}  // namespace fakecuda

extern "C" {

CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  if (pool == nullptr || poolProps == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = validate_device_location(s, &poolProps->location, poolProps->allocType);
      r != CUDA_SUCCESS) {
    return r == CUDA_ERROR_INVALID_DEVICE ? CUDA_ERROR_INVALID_VALUE : r;
  }
  *pool = create_pool(s, poolProps->location.id, false, poolProps->maxSize);
  return CUDA_SUCCESS;
}

// Outstanding allocations keep a destroyed pool alive until they are freed (documented).
CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  if (!is_live_pool(s, pool) || pool->is_default) return CUDA_ERROR_INVALID_VALUE;
  DeviceState& d = s.devices[static_cast<size_t>(pool->device)];
  if (d.current_pool == pool) d.current_pool = d.default_pool;
  pool->destroyed = true;
  if (pool->live_allocations == 0) {
    delete_pool(s, pool);
  } else {
    shrink_reserved(s, pool, pool->used);
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  if (!is_live_pool(s, pool)) return CUDA_ERROR_INVALID_VALUE;
  shrink_reserved(s, pool, std::max<uint64_t>(pool->used, minBytesToKeep));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  if (!is_live_pool(s, pool)) return CUDA_ERROR_INVALID_VALUE;
  auto* as_int = static_cast<int*>(value);
  auto* as_u64 = static_cast<cuuint64_t*>(value);
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
      *as_int = pool->reuse_follow_event_dependencies;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
      *as_int = pool->reuse_allow_opportunistic;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      *as_int = pool->reuse_allow_internal_dependencies;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      *as_u64 = pool->release_threshold;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
      *as_u64 = pool->reserved;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      *as_u64 = pool->reserved_high;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
      *as_u64 = pool->used;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      *as_u64 = pool->used_high;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

// The high watermarks can only be reset (to the current value) by writing 0.
CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  if (!is_live_pool(s, pool)) return CUDA_ERROR_INVALID_VALUE;
  int int_value = *static_cast<int*>(value);
  cuuint64_t u64_value = *static_cast<cuuint64_t*>(value);
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
      pool->reuse_follow_event_dependencies = int_value;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
      pool->reuse_allow_opportunistic = int_value;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      pool->reuse_allow_internal_dependencies = int_value;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      pool->release_threshold = u64_value;
      shrink_reserved(s, pool, std::max(pool->used, pool->release_threshold));
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      if (u64_value != 0) return CUDA_ERROR_INVALID_VALUE;
      pool->reserved_high = pool->reserved;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (u64_value != 0) return CUDA_ERROR_INVALID_VALUE;
      pool->used_high = pool->used;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_device(s, dev); r != CUDA_SUCCESS) return r;
  *pool_out = s.devices[static_cast<size_t>(dev)].default_pool;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_device(s, dev); r != CUDA_SUCCESS) return r;
  *pool = s.devices[static_cast<size_t>(dev)].current_pool;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_device(s, dev); r != CUDA_SUCCESS) return r;
  if (!is_live_pool(s, pool) || pool->device != dev) return CUDA_ERROR_INVALID_VALUE;
  s.devices[static_cast<size_t>(dev)].current_pool = pool;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetDefaultMemPool(CUmemoryPool* pool_out, CUmemLocation* location,
                                        CUmemAllocationType type) {
  if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = validate_device_location(s, location, type); r != CUDA_SUCCESS) return r;
  *pool_out = s.devices[static_cast<size_t>(location->id)].default_pool;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetMemPool(CUmemoryPool* pool, CUmemLocation* location,
                                 CUmemAllocationType type) {
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = validate_device_location(s, location, type); r != CUDA_SUCCESS) return r;
  *pool = s.devices[static_cast<size_t>(location->id)].current_pool;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemSetMemPool(CUmemLocation* location, CUmemAllocationType type,
                                 CUmemoryPool pool) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = validate_device_location(s, location, type); r != CUDA_SUCCESS) return r;
  if (!is_live_pool(s, pool) || pool->device != location->id) return CUDA_ERROR_INVALID_VALUE;
  s.devices[static_cast<size_t>(location->id)].current_pool = pool;
  return CUDA_SUCCESS;
}

}  // extern "C"
