// SPDX-License-Identifier: Apache-2.0
// Stream-ordered allocation: cuMemAllocAsync, cuMemAllocFromPoolAsync, cuMemFreeAsync, each
// also in its per-thread-default-stream (_ptsz) ABI. The memory belongs to a pool of the
// device, not to the context.
#include "interpose/hooks/hook.h"
#include "interpose/hooks/wrappers.h"

using gmt::format::Api;
using gmt::format::MemoryKind;
using gmt::interpose::Hook;

namespace {

Hook::Current pool_owner(Hook& hook) {
  Hook::Current owner = hook.current();
  owner.context = 0;
  return owner;
}

template <class Fn, class... Rest>
CUresult alloc_async(Hook& hook, Fn real, Api api, CUdeviceptr* dptr, size_t bytesize,
                     Rest... rest) {
  const CUresult result = real(dptr, bytesize, rest...);
  if (hook.outermost()) {
    hook.allocated(result, MemoryKind::kStreamOrdered, api, dptr ? *dptr : 0, bytesize,
                   pool_owner(hook));
  }
  return result;
}

template <class Fn>
CUresult free_async(Hook& hook, Fn real, CUdeviceptr dptr, CUstream stream) {
  if (hook.outermost() && dptr != 0) hook.events().freeing(Api::kCuMemFreeAsync, dptr);
  return real(dptr, stream);
}

}  // namespace

extern "C" {

CUresult gmt_cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream stream) {
  Hook hook;
  return alloc_async(hook, GMT_REAL(hook, cuMemAllocAsync), Api::kCuMemAllocAsync, dptr, bytesize,
                     stream);
}

CUresult gmt_cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream stream) {
  Hook hook;
  return alloc_async(hook, GMT_REAL(hook, cuMemAllocAsync_ptsz), Api::kCuMemAllocAsync, dptr,
                     bytesize, stream);
}

CUresult gmt_cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                     CUstream stream) {
  Hook hook;
  return alloc_async(hook, GMT_REAL(hook, cuMemAllocFromPoolAsync), Api::kCuMemAllocFromPoolAsync,
                     dptr, bytesize, pool, stream);
}

CUresult gmt_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                          CUstream stream) {
  Hook hook;
  return alloc_async(hook, GMT_REAL(hook, cuMemAllocFromPoolAsync_ptsz),
                     Api::kCuMemAllocFromPoolAsync, dptr, bytesize, pool, stream);
}

CUresult gmt_cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  Hook hook;
  return free_async(hook, GMT_REAL(hook, cuMemFreeAsync), dptr, stream);
}

CUresult gmt_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream) {
  Hook hook;
  return free_async(hook, GMT_REAL(hook, cuMemFreeAsync_ptsz), dptr, stream);
}

CUresult gmt_cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  Hook hook;
  const CUresult result = GMT_REAL(hook, cuMemPoolCreate)(pool, props);
  if (hook.outermost() && result == CUDA_SUCCESS && pool != nullptr) {
    const int device = props != nullptr && props->location.type == CU_MEM_LOCATION_TYPE_DEVICE
                           ? props->location.id
                           : -1;
    hook.events().pool_event(Api::kCuMemPoolCreate, device, reinterpret_cast<uint64_t>(*pool), 0);
  }
  return result;
}

CUresult gmt_cuMemPoolDestroy(CUmemoryPool pool) {
  Hook hook;
  if (hook.outermost() && pool != nullptr) {
    hook.events().pool_event(Api::kCuMemPoolDestroy, -1, reinterpret_cast<uint64_t>(pool), 0);
  }
  return GMT_REAL(hook, cuMemPoolDestroy)(pool);
}

CUresult gmt_cuMemPoolTrimTo(CUmemoryPool pool, size_t min_bytes_to_keep) {
  Hook hook;
  const CUresult result = GMT_REAL(hook, cuMemPoolTrimTo)(pool, min_bytes_to_keep);
  if (hook.outermost() && result == CUDA_SUCCESS) {
    hook.events().pool_event(Api::kCuMemPoolTrimTo, -1, reinterpret_cast<uint64_t>(pool),
                             min_bytes_to_keep);
  }
  return result;
}

GMT_EXPORT_WRAPPER(cuMemPoolCreate)
GMT_EXPORT_WRAPPER(cuMemPoolDestroy)
GMT_EXPORT_WRAPPER(cuMemPoolTrimTo)
GMT_EXPORT_WRAPPER(cuMemAllocAsync)
GMT_EXPORT_WRAPPER(cuMemAllocAsync_ptsz)
GMT_EXPORT_WRAPPER(cuMemAllocFromPoolAsync)
GMT_EXPORT_WRAPPER(cuMemAllocFromPoolAsync_ptsz)
GMT_EXPORT_WRAPPER(cuMemFreeAsync)
GMT_EXPORT_WRAPPER(cuMemFreeAsync_ptsz)
}
