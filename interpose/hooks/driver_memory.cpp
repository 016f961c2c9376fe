// Device linear memory: cuMemAlloc / cuMemFree, current and 32-bit ABIs.
#include "interpose/export.h"
#include "interpose/hooks/depth_guard.h"
#include "interpose/hooks/wrappers.h"
#include "interpose/runtime.h"

namespace {

using gmt::format::Api;
using gmt::format::MemoryKind;
using gmt::interpose::DepthGuard;
using gmt::interpose::EntryPoint;
using gmt::interpose::Runtime;

// Stamped after the real call, so that the address cannot have been handed out and freed by
// another thread before the record of its allocation.
void record_allocation(Runtime& rt, CUresult result, MemoryKind kind, Api api, uint64_t address,
                       uint64_t size) {
  rt.events().allocation(static_cast<uint32_t>(result), rt.entry_points().current_device(), kind,
                         api, result == CUDA_SUCCESS ? address : 0, size);
}

}  // namespace

extern "C" {

CUresult gmt_cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  Runtime& rt = Runtime::get();
  auto real = rt.entry_points().real_as<PFN_cuMemAlloc_v3020>(EntryPoint::kCuMemAlloc_v2);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  DepthGuard guard;
  const CUresult result = real(dptr, bytesize);
  if (guard.outermost()) {
    record_allocation(rt, result, MemoryKind::kDevice, Api::kCuMemAlloc, dptr ? *dptr : 0,
                      bytesize);
  }
  return result;
}

CUresult gmt_cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
  Runtime& rt = Runtime::get();
  auto real = rt.entry_points().real_as<PFN_cuMemAlloc_v2000>(EntryPoint::kCuMemAlloc);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  DepthGuard guard;
  const CUresult result = real(dptr, bytesize);
  if (guard.outermost()) {
    record_allocation(rt, result, MemoryKind::kDevice, Api::kCuMemAlloc, dptr ? *dptr : 0,
                      bytesize);
  }
  return result;
}

// Stamped before the real free: once it runs, another thread may get the same address.
CUresult gmt_cuMemFree_v2(CUdeviceptr dptr) {
  Runtime& rt = Runtime::get();
  auto real = rt.entry_points().real_as<PFN_cuMemFree_v3020>(EntryPoint::kCuMemFree_v2);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  DepthGuard guard;
  if (guard.outermost() && dptr != 0) rt.events().freeing(Api::kCuMemFree, dptr);
  return real(dptr);
}

CUresult gmt_cuMemFree(CUdeviceptr_v1 dptr) {
  Runtime& rt = Runtime::get();
  auto real = rt.entry_points().real_as<PFN_cuMemFree_v2000>(EntryPoint::kCuMemFree);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  DepthGuard guard;
  if (guard.outermost() && dptr != 0) rt.events().freeing(Api::kCuMemFree, dptr);
  return real(dptr);
}

GMT_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr*, size_t) __attribute__((alias("gmt_cuMemAlloc_v2")));
GMT_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1*, unsigned int)
    __attribute__((alias("gmt_cuMemAlloc")));
GMT_EXPORT CUresult cuMemFree_v2(CUdeviceptr) __attribute__((alias("gmt_cuMemFree_v2")));
GMT_EXPORT CUresult cuMemFree(CUdeviceptr_v1) __attribute__((alias("gmt_cuMemFree")));
}
