// SPDX-License-Identifier: Apache-2.0
// Stream-ordered allocation: cuMemAllocAsync, cuMemAllocFromPoolAsync, cuMemFreeAsync, each in
// the legacy-stream and per-thread-stream (_ptsz) flavour. Nothing is asynchronous in the fake:
// the memory exists when the call returns and is gone when the free returns.
#include "driver/driver_state.h"

using namespace fakecuda;

namespace {

CUresult alloc_async(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* ctx = nullptr;
  if (CUresult r = context_of_stream(s, hStream, &ctx); r != CUDA_SUCCESS) return r;
  if (pool == nullptr) {
    pool = s.devices[static_cast<size_t>(ctx->device)].current_pool;
  } else if (!is_live_pool(s, pool)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  uint64_t address = 0;
  CUresult r = pool_allocate(s, pool, ctx, bytesize, &address);
  if (r == CUDA_SUCCESS) *dptr = address;
  return r;
}

CUresult free_async(CUdeviceptr dptr, CUstream hStream) {
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* ctx = nullptr;
  if (CUresult r = context_of_stream(s, hStream, &ctx); r != CUDA_SUCCESS) return r;
  auto it = find_allocation_base(s, dptr);
  if (it == s.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  // Graph allocations may be freed outside the graph, too.
  if (it->second.kind != Kind::kStreamOrdered && it->second.kind != Kind::kGraph) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  release_allocation(s, it);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return alloc_async(dptr, bytesize, nullptr, hStream);
}

CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return alloc_async(dptr, bytesize, nullptr, hStream);
}

CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                         CUstream hStream) {
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return alloc_async(dptr, bytesize, pool, hStream);
}

CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                              CUstream hStream) {
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return alloc_async(dptr, bytesize, pool, hStream);
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  return free_async(dptr, hStream);
}

CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return free_async(dptr, hStream);
}

}  // extern "C"
