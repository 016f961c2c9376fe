// SPDX-License-Identifier: Apache-2.0
// Stream-ordered allocation (cudaMallocAsync, cudaMallocFromPoolAsync, cudaFreeAsync, with
// their _ptsz flavours going to the driver's _ptsz entry points) and memory pools.
#include "runtime/runtime_state.h"

using namespace fakecuda::runtime;

namespace {

enum class Stream { kLegacy, kPerThread };

cudaError_t malloc_async(Stream stream, void** devPtr, size_t size, cudaMemPool_t pool,
                         cudaStream_t hStream) {
  if (devPtr == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  const DriverEntryPoints& d = driver();
  bool per_thread = stream == Stream::kPerThread;
  CUdeviceptr p = 0;
  CUresult r = pool == nullptr
                   ? (per_thread ? d.cuMemAllocAsync_ptsz : d.cuMemAllocAsync)(&p, size, hStream)
                   : (per_thread ? d.cuMemAllocFromPoolAsync_ptsz : d.cuMemAllocFromPoolAsync)(
                         &p, size, pool, hStream);
  if (r == CUDA_SUCCESS) *devPtr = reinterpret_cast<void*>(p);
  return finish(r);
}

cudaError_t free_async(Stream stream, void* devPtr, cudaStream_t hStream) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  const DriverEntryPoints& d = driver();
  auto function = stream == Stream::kPerThread ? d.cuMemFreeAsync_ptsz : d.cuMemFreeAsync;
  return finish(function(reinterpret_cast<CUdeviceptr>(devPtr), hStream));
}

// The runtime's pool properties mirror the driver's field by field.
CUmemPoolProps to_driver(const cudaMemPoolProps& props) {
  CUmemPoolProps converted{};
  converted.allocType = static_cast<CUmemAllocationType>(props.allocType);
  converted.handleTypes = static_cast<CUmemAllocationHandleType>(props.handleTypes);
  converted.location.type = static_cast<CUmemLocationType>(props.location.type);
  converted.location.id = props.location.id;
  converted.win32SecurityAttributes = props.win32SecurityAttributes;
  converted.maxSize = props.maxSize;
  converted.usage = props.usage;
  return converted;
}

}  // namespace

extern "C" {

cudaError_t CUDARTAPI cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  return malloc_async(Stream::kLegacy, devPtr, size, nullptr, hStream);
}

cudaError_t CUDARTAPI cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t hStream) {
  return malloc_async(Stream::kPerThread, devPtr, size, nullptr, hStream);
}

cudaError_t CUDARTAPI cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool,
                                              cudaStream_t stream) {
  if (memPool == nullptr) return record(cudaErrorInvalidValue);
  return malloc_async(Stream::kLegacy, ptr, size, memPool, stream);
}

cudaError_t CUDARTAPI cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, cudaMemPool_t memPool,
                                                   cudaStream_t stream) {
  if (memPool == nullptr) return record(cudaErrorInvalidValue);
  return malloc_async(Stream::kPerThread, ptr, size, memPool, stream);
}

cudaError_t CUDARTAPI cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  return free_async(Stream::kLegacy, devPtr, hStream);
}

cudaError_t CUDARTAPI cudaFreeAsync_ptsz(void* devPtr, cudaStream_t hStream) {
  return free_async(Stream::kPerThread, devPtr, hStream);
}

cudaError_t CUDARTAPI cudaMemPoolCreate(cudaMemPool_t* memPool,
                                        const struct cudaMemPoolProps* poolProps) {
  if (memPool == nullptr || poolProps == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  CUmemPoolProps props = to_driver(*poolProps);
  return finish(driver().cuMemPoolCreate(memPool, &props));
}

cudaError_t CUDARTAPI cudaMemPoolDestroy(cudaMemPool_t memPool) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuMemPoolDestroy(memPool));
}

cudaError_t CUDARTAPI cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuMemPoolTrimTo(memPool, minBytesToKeep));
}

// cudaMemPoolAttr and CUmemPool_attribute share their values.
cudaError_t CUDARTAPI cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr,
                                              void* value) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(
      driver().cuMemPoolGetAttribute(memPool, static_cast<CUmemPool_attribute>(attr), value));
}

cudaError_t CUDARTAPI cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr,
                                              void* value) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(
      driver().cuMemPoolSetAttribute(memPool, static_cast<CUmemPool_attribute>(attr), value));
}

cudaError_t CUDARTAPI cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuDeviceGetDefaultMemPool(memPool, device));
}

cudaError_t CUDARTAPI cudaDeviceGetMemPool(cudaMemPool_t* memPool, int device) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuDeviceGetMemPool(memPool, device));
}

cudaError_t CUDARTAPI cudaDeviceSetMemPool(int device, cudaMemPool_t memPool) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuDeviceSetMemPool(device, memPool));
}

}  // extern "C"
