// SPDX-License-Identifier: Apache-2.0
// Virtual memory management, as PyTorch's expandable segments, NCCL and XLA use it: physical
// allocations (cuMemCreate/cuMemRelease, cuMemRetainAllocationHandle), address reservations
// (cuMemAddressReserve/Free) and the mappings between them (cuMemMap/Unmap). Only physical
// bytes are usage; the analyzer keeps a handle's bytes until it is released and unmapped.
#include "interpose/hooks/hook.h"
#include "interpose/hooks/wrappers.h"

using gmt::format::Api;
using gmt::format::MemoryKind;
using gmt::interpose::Hook;

extern "C" {

CUresult gmt_cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                         const CUmemAllocationProp* prop, unsigned long long flags) {
  Hook hook;
  const CUresult result = GMT_REAL(hook, cuMemCreate)(handle, size, prop, flags);
  if (hook.outermost()) {
    // The device is the one the properties name, not the current context's; a host location
    // (NCCL asks for one) is host memory.
    Hook::Current owner;
    const bool on_device = prop != nullptr && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
    if (on_device) owner.device = prop->location.id;
    hook.allocated(result, on_device ? MemoryKind::kVmmPhysical : MemoryKind::kHostVmm,
                   Api::kCuMemCreate, handle ? *handle : 0, size, owner);
  }
  return result;
}

CUresult gmt_cuMemRelease(CUmemGenericAllocationHandle handle) {
  Hook hook;
  if (hook.outermost()) hook.events().freeing(Api::kCuMemRelease, handle);
  return GMT_REAL(hook, cuMemRelease)(handle);
}

CUresult gmt_cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  Hook hook;
  const CUresult result = GMT_REAL(hook, cuMemRetainAllocationHandle)(handle, addr);
  if (hook.outermost() && result == CUDA_SUCCESS && handle != nullptr) {
    hook.events().handle_retained(*handle);
  }
  return result;
}

CUresult gmt_cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                 unsigned long long flags) {
  Hook hook;
  const CUresult result = GMT_REAL(hook, cuMemAddressReserve)(ptr, size, alignment, addr, flags);
  if (hook.outermost()) {
    hook.allocated(result, MemoryKind::kVmmReservation, Api::kCuMemAddressReserve, ptr ? *ptr : 0,
                   size, Hook::Current{});
  }
  return result;
}

CUresult gmt_cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  Hook hook;
  if (hook.outermost()) hook.events().freeing(Api::kCuMemAddressFree, ptr);
  return GMT_REAL(hook, cuMemAddressFree)(ptr, size);
}

CUresult gmt_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                      CUmemGenericAllocationHandle handle, unsigned long long flags) {
  Hook hook;
  const CUresult result = GMT_REAL(hook, cuMemMap)(ptr, size, offset, handle, flags);
  if (hook.outermost() && result == CUDA_SUCCESS) {
    // The device is the handle's, which the analyzer knows from cuMemCreate.
    hook.events().mapped(-1, ptr, size, offset, handle);
  }
  return result;
}

CUresult gmt_cuMemUnmap(CUdeviceptr ptr, size_t size) {
  Hook hook;
  if (hook.outermost()) hook.events().unmapping(ptr, size);
  return GMT_REAL(hook, cuMemUnmap)(ptr, size);
}

GMT_EXPORT_WRAPPER(cuMemCreate)
GMT_EXPORT_WRAPPER(cuMemRelease)
GMT_EXPORT_WRAPPER(cuMemRetainAllocationHandle)
GMT_EXPORT_WRAPPER(cuMemAddressReserve)
GMT_EXPORT_WRAPPER(cuMemAddressFree)
GMT_EXPORT_WRAPPER(cuMemMap)
GMT_EXPORT_WRAPPER(cuMemUnmap)
}
