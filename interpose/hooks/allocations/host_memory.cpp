// SPDX-License-Identifier: Apache-2.0
// Pinned host memory (cuMemAllocHost, cuMemHostAlloc, cuMemFreeHost) and registered host memory
// (cuMemHostRegister, cuMemHostUnregister). Host memory belongs to the context it was made in,
// but to no device.
#include "interpose/hooks/hook.h"
#include "interpose/hooks/wrappers.h"

using gmt::format::Api;
using gmt::format::MemoryKind;
using gmt::interpose::Hook;

namespace {

Hook::Current host_owner(Hook& hook) {
  Hook::Current owner = hook.current();
  owner.device = -1;
  return owner;
}

uint64_t host_address(void* const* pp) {
  return pp ? reinterpret_cast<uint64_t>(*pp) : 0;
}

}  // namespace

extern "C" {

CUresult gmt_cuMemAllocHost_v2(void** pp, size_t bytesize) {
  Hook hook;
  const CUresult result = GMT_REAL(hook, cuMemAllocHost_v2)(pp, bytesize);
  if (hook.outermost()) {
    hook.allocated(result, MemoryKind::kHostPinned, Api::kCuMemAllocHost, host_address(pp),
                   bytesize, host_owner(hook));
  }
  return result;
}

CUresult gmt_cuMemAllocHost(void** pp, unsigned int bytesize) {
  Hook hook;
  const CUresult result = GMT_REAL(hook, cuMemAllocHost)(pp, bytesize);
  if (hook.outermost()) {
    hook.allocated(result, MemoryKind::kHostPinned, Api::kCuMemAllocHost, host_address(pp),
                   bytesize, host_owner(hook));
  }
  return result;
}

CUresult gmt_cuMemHostAlloc(void** pp, size_t bytesize, unsigned int flags) {
  Hook hook;
  const CUresult result = GMT_REAL(hook, cuMemHostAlloc)(pp, bytesize, flags);
  if (hook.outermost()) {
    hook.allocated(result, MemoryKind::kHostPinned, Api::kCuMemHostAlloc, host_address(pp),
                   bytesize, host_owner(hook));
  }
  return result;
}

CUresult gmt_cuMemFreeHost(void* p) {
  Hook hook;
  if (hook.outermost() && p != nullptr)
    hook.events().freeing(Api::kCuMemFreeHost, reinterpret_cast<uint64_t>(p));
  return GMT_REAL(hook, cuMemFreeHost)(p);
}

CUresult gmt_cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int flags) {
  Hook hook;
  const CUresult result = GMT_REAL(hook, cuMemHostRegister_v2)(p, bytesize, flags);
  if (hook.outermost()) {
    hook.allocated(result, MemoryKind::kHostRegistered, Api::kCuMemHostRegister,
                   reinterpret_cast<uint64_t>(p), bytesize, host_owner(hook));
  }
  return result;
}

CUresult gmt_cuMemHostRegister(void* p, size_t bytesize, unsigned int flags) {
  Hook hook;
  const CUresult result = GMT_REAL(hook, cuMemHostRegister)(p, bytesize, flags);
  if (hook.outermost()) {
    hook.allocated(result, MemoryKind::kHostRegistered, Api::kCuMemHostRegister,
                   reinterpret_cast<uint64_t>(p), bytesize, host_owner(hook));
  }
  return result;
}

CUresult gmt_cuMemHostUnregister(void* p) {
  Hook hook;
  if (hook.outermost() && p != nullptr) {
    hook.events().freeing(Api::kCuMemHostUnregister, reinterpret_cast<uint64_t>(p));
  }
  return GMT_REAL(hook, cuMemHostUnregister)(p);
}

GMT_EXPORT_WRAPPER(cuMemAllocHost_v2)
GMT_EXPORT_WRAPPER(cuMemAllocHost)
GMT_EXPORT_WRAPPER(cuMemHostAlloc)
GMT_EXPORT_WRAPPER(cuMemFreeHost)
GMT_EXPORT_WRAPPER(cuMemHostRegister_v2)
GMT_EXPORT_WRAPPER(cuMemHostRegister)
GMT_EXPORT_WRAPPER(cuMemHostUnregister)
}
