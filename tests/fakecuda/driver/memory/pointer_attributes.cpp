// SPDX-License-Identifier: Apache-2.0
// cuPointerGetAttribute: what an address is, as the driver sees it through unified addressing.
#include "driver/driver_state.h"

using namespace fakecuda;

namespace fakecuda {

bool describe_pointer(State& s, uint64_t address, PointerInfo* info) {
  if (const Allocation* allocation = find_allocation_containing(s, address)) {
    info->device = allocation->device;
    info->base = allocation->base;
    info->size = allocation->size;
    info->allocation = allocation;
    info->host_backed = allocation->kind == Kind::kPinnedHost ||
                        allocation->kind == Kind::kHostRegistered ||
                        allocation->kind == Kind::kManaged;
    return true;
  }
  int device = 0;
  uint64_t base = 0;
  uint64_t size = 0;
  if (!find_vmm_mapping(s, address, &device, &base, &size)) return false;
  *info = PointerInfo{device, base, size, nullptr, false};
  return true;
}

}  // namespace fakecuda

extern "C" {

CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  PointerInfo info;
  if (!describe_pointer(s, ptr, &info)) return CUDA_ERROR_INVALID_VALUE;
  const Allocation* allocation = info.allocation;
  Kind kind = allocation != nullptr ? allocation->kind : Kind::kDevice;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = allocation != nullptr ? allocation->ctx : nullptr;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned*>(data) = kind == Kind::kPinnedHost || kind == Kind::kHostRegistered
                                          ? CU_MEMORYTYPE_HOST
                                          : CU_MEMORYTYPE_DEVICE;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      *static_cast<CUdeviceptr*>(data) = ptr;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (!info.host_backed) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<void**>(data) = reinterpret_cast<void*>(ptr);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      *static_cast<unsigned long long*>(data) = allocation != nullptr ? allocation->buffer_id : 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<bool*>(data) = kind == Kind::kManaged;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = info.device;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = info.base;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = info.size;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      *static_cast<bool*>(data) = true;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      *static_cast<CUmemoryPool*>(data) = allocation != nullptr ? allocation->pool : nullptr;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

}  // extern "C"
