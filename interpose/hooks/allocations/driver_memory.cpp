// SPDX-License-Identifier: Apache-2.0
// Device linear memory: cuMemAlloc, cuMemAllocPitch, cuMemAllocManaged and cuMemFree, in each
// ABI the driver exports.
#include "interpose/hooks/hook.h"
#include "interpose/hooks/wrappers.h"

using gmt::format::Api;
using gmt::format::MemoryKind;
using gmt::interpose::Hook;

namespace {

// A free is stamped before the real call: once it runs, another thread may get the address.
template <class Fn, class Ptr>
CUresult free_device_memory(Hook& hook, Fn real, Api api, Ptr dptr) {
  if (hook.outermost() && dptr != 0) hook.events().freeing(api, dptr);
  return real(dptr);
}

}  // namespace

extern "C" {

CUresult gmt_cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  Hook hook;
  const CUresult result = GMT_REAL(hook, cuMemAlloc_v2)(dptr, bytesize);
  if (hook.outermost()) {
    hook.allocated(result, MemoryKind::kDevice, Api::kCuMemAlloc, dptr ? *dptr : 0, bytesize,
                   hook.current());
  }
  return result;
}

CUresult gmt_cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
  Hook hook;
  const CUresult result = GMT_REAL(hook, cuMemAlloc)(dptr, bytesize);
  if (hook.outermost()) {
    hook.allocated(result, MemoryKind::kDevice, Api::kCuMemAlloc, dptr ? *dptr : 0, bytesize,
                   hook.current());
  }
  return result;
}

// Pitched memory occupies pitch × height bytes; a failure is recorded with what was asked.
CUresult gmt_cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                                unsigned int element_size) {
  Hook hook;
  const CUresult result =
      GMT_REAL(hook, cuMemAllocPitch_v2)(dptr, pitch, width, height, element_size);
  if (hook.outermost()) {
    const uint64_t bytes = result == CUDA_SUCCESS && pitch ? *pitch * height : width * height;
    hook.allocated(result, MemoryKind::kPitched, Api::kCuMemAllocPitch, dptr ? *dptr : 0, bytes,
                   hook.current());
  }
  return result;
}

CUresult gmt_cuMemAllocPitch(CUdeviceptr_v1* dptr, unsigned int* pitch, unsigned int width,
                             unsigned int height, unsigned int element_size) {
  Hook hook;
  const CUresult result = GMT_REAL(hook, cuMemAllocPitch)(dptr, pitch, width, height, element_size);
  if (hook.outermost()) {
    const uint64_t bytes =
        result == CUDA_SUCCESS && pitch ? uint64_t{*pitch} * height : uint64_t{width} * height;
    hook.allocated(result, MemoryKind::kPitched, Api::kCuMemAllocPitch, dptr ? *dptr : 0, bytes,
                   hook.current());
  }
  return result;
}

CUresult gmt_cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  Hook hook;
  const CUresult result = GMT_REAL(hook, cuMemAllocManaged)(dptr, bytesize, flags);
  if (hook.outermost()) {
    hook.allocated(result, MemoryKind::kManaged, Api::kCuMemAllocManaged, dptr ? *dptr : 0,
                   bytesize, hook.current());
  }
  return result;
}

CUresult gmt_cuMemFree_v2(CUdeviceptr dptr) {
  Hook hook;
  return free_device_memory(hook, GMT_REAL(hook, cuMemFree_v2), Api::kCuMemFree, dptr);
}

CUresult gmt_cuMemFree(CUdeviceptr_v1 dptr) {
  Hook hook;
  return free_device_memory(hook, GMT_REAL(hook, cuMemFree), Api::kCuMemFree, dptr);
}

GMT_EXPORT_WRAPPER(cuMemAlloc_v2)
GMT_EXPORT_WRAPPER(cuMemAlloc)
GMT_EXPORT_WRAPPER(cuMemAllocPitch_v2)
GMT_EXPORT_WRAPPER(cuMemAllocPitch)
GMT_EXPORT_WRAPPER(cuMemAllocManaged)
GMT_EXPORT_WRAPPER(cuMemFree_v2)
GMT_EXPORT_WRAPPER(cuMemFree)
}
