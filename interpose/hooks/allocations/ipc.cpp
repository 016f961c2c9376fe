// SPDX-License-Identifier: Apache-2.0
// Memory imported from another process (cuIpcOpenMemHandle): recorded, so that reports can show
// it, but it is the exporter's usage, not ours.
#include "interpose/hooks/hook.h"
#include "interpose/hooks/wrappers.h"

using gmt::format::Api;
using gmt::format::MemoryKind;
using gmt::interpose::DriverQuery;
using gmt::interpose::Hook;

namespace {

// The handle does not carry the size: ask the driver for the extent of the mapped range.
uint64_t imported_bytes(Hook& hook, CUdeviceptr dptr) {
  auto range = hook.runtime().entry_points().query_as<PFN_cuMemGetAddressRange_v3020>(
      DriverQuery::cuMemGetAddressRange_v2);
  CUdeviceptr base = 0;
  size_t size = 0;
  if (range == nullptr || range(&base, &size, dptr) != CUDA_SUCCESS) return 0;
  return size;
}

template <class Fn>
CUresult open_handle(Hook& hook, Fn real, CUdeviceptr* dptr, CUipcMemHandle handle,
                     unsigned int flags) {
  const CUresult result = real(dptr, handle, flags);
  if (hook.outermost()) {
    const uint64_t address = dptr ? *dptr : 0;
    const uint64_t bytes = result == CUDA_SUCCESS ? imported_bytes(hook, address) : 0;
    hook.allocated(result, MemoryKind::kIpcImport, Api::kCuIpcOpenMemHandle, address, bytes,
                   hook.current());
  }
  return result;
}

}  // namespace

extern "C" {

CUresult gmt_cuIpcOpenMemHandle_v2(CUdeviceptr* dptr, CUipcMemHandle handle, unsigned int flags) {
  Hook hook;
  return open_handle(hook, GMT_REAL(hook, cuIpcOpenMemHandle_v2), dptr, handle, flags);
}

CUresult gmt_cuIpcOpenMemHandle(CUdeviceptr* dptr, CUipcMemHandle handle, unsigned int flags) {
  Hook hook;
  return open_handle(hook, GMT_REAL(hook, cuIpcOpenMemHandle), dptr, handle, flags);
}

CUresult gmt_cuIpcCloseMemHandle(CUdeviceptr dptr) {
  Hook hook;
  if (hook.outermost() && dptr != 0) hook.events().freeing(Api::kCuIpcCloseMemHandle, dptr);
  return GMT_REAL(hook, cuIpcCloseMemHandle)(dptr);
}

GMT_EXPORT_WRAPPER(cuIpcOpenMemHandle_v2)
GMT_EXPORT_WRAPPER(cuIpcOpenMemHandle)
GMT_EXPORT_WRAPPER(cuIpcCloseMemHandle)
}
