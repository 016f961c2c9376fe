// SPDX-License-Identifier: Apache-2.0
// CUDA IPC: exporting device allocations (cuIpcGetMemHandle) and importing them
// (cuIpcOpenMemHandle/cuIpcCloseMemHandle). An import is a new address range mapping memory
// another allocation owns, so it never counts on the device. Opens of the same handle share
// one mapping and are reference counted, as in the real driver; unlike the real driver, the
// fake also lets a process open its own handles, so single-process tests can exercise imports.
#include <unistd.h>

#include <cstring>

#include "driver/driver_state.h"

using namespace fakecuda;

namespace {

constexpr char kMagic[8] = {'F', 'A', 'K', 'E', 'I', 'P', 'C', '1'};

struct HandleContents {
  char magic[8];
  uint32_t pid;
  int32_t physical_device;
  uint64_t base;
  uint64_t size;
  uint64_t buffer_id;
};
static_assert(sizeof(HandleContents) <= CU_IPC_HANDLE_SIZE);

uint64_t source_key(const HandleContents& contents) {
  return (static_cast<uint64_t>(contents.pid) << 40) ^ contents.buffer_id;
}

CUresult open_handle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  if (pdptr == nullptr || (Flags & ~static_cast<unsigned>(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  HandleContents contents;
  std::memcpy(&contents, handle.reserved, sizeof contents);
  if (std::memcmp(contents.magic, kMagic, sizeof kMagic) != 0 || contents.size == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* ctx = nullptr;
  if (CUresult r = require_context(s, &ctx); r != CUDA_SUCCESS) return r;
  uint64_t key = source_key(contents);
  for (auto& [base, allocation] : s.allocations) {
    if (allocation.kind == Kind::kIpcImport && allocation.ipc_source_key == key) {
      allocation.ipc_refs += 1;
      *pdptr = base;
      return CUDA_SUCCESS;
    }
  }
  DeviceState& d = s.devices[static_cast<size_t>(ctx->device)];
  uint64_t span = round_up(contents.size, kDeviceAlignment);
  std::optional<uint64_t> base = d.space->allocate(span, kDeviceAlignment);
  if (!base) return CUDA_ERROR_OUT_OF_MEMORY;
  Allocation allocation;
  allocation.kind = Kind::kIpcImport;
  allocation.base = *base;
  allocation.size = contents.size;
  allocation.span = span;
  allocation.space = d.space.get();
  allocation.device = ctx->device;
  allocation.ctx = ctx;
  allocation.ipc_refs = 1;
  allocation.ipc_source_key = key;
  insert_allocation(s, allocation);
  *pdptr = *base;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuIpcGetMemHandle(CUipcMemHandle* pHandle, CUdeviceptr dptr) {
  if (pHandle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  const Allocation* allocation = find_allocation_containing(s, dptr);
  if (allocation == nullptr ||
      (allocation->kind != Kind::kDevice && allocation->kind != Kind::kPitched)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  HandleContents contents{};
  std::memcpy(contents.magic, kMagic, sizeof kMagic);
  contents.pid = static_cast<uint32_t>(getpid());
  contents.physical_device = s.devices[static_cast<size_t>(allocation->device)].physical;
  contents.base = allocation->base;
  contents.size = allocation->size;
  contents.buffer_id = allocation->buffer_id;
  std::memset(pHandle->reserved, 0, sizeof pHandle->reserved);
  std::memcpy(pHandle->reserved, &contents, sizeof contents);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuIpcOpenMemHandle_v2(CUdeviceptr* pdptr, CUipcMemHandle handle,
                                       unsigned int Flags) {
  return open_handle(pdptr, handle, Flags);
}

CUresult CUDAAPI cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  return open_handle(pdptr, handle, Flags);
}

CUresult CUDAAPI cuIpcCloseMemHandle(CUdeviceptr dptr) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  auto it = find_allocation_base(s, dptr);
  if (it == s.allocations.end() || it->second.kind != Kind::kIpcImport) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (--it->second.ipc_refs == 0) release_allocation(s, it);
  return CUDA_SUCCESS;
}

}  // extern "C"
