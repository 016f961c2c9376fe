// SPDX-License-Identifier: Apache-2.0
// The public CUDA API a user (or library) called to allocate or free: kept on every event so a
// report can say "cudaMallocAsync" rather than the driver entry point it became.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gmt::format {

// Values are part of the file format: append only, never renumber or reorder.
#define GMT_API_LIST(X)                                          \
  X(kUnknown, "unknown")                                         \
  X(kCuMemAlloc, "cuMemAlloc")                                   \
  X(kCuMemFree, "cuMemFree")                                     \
  X(kCuMemAllocPitch, "cuMemAllocPitch")                         \
  X(kCuMemAllocManaged, "cuMemAllocManaged")                     \
  X(kCuMemAllocHost, "cuMemAllocHost")                           \
  X(kCuMemHostAlloc, "cuMemHostAlloc")                           \
  X(kCuMemFreeHost, "cuMemFreeHost")                             \
  X(kCuMemHostRegister, "cuMemHostRegister")                     \
  X(kCuMemHostUnregister, "cuMemHostUnregister")                 \
  X(kCuMemAllocAsync, "cuMemAllocAsync")                         \
  X(kCuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync")         \
  X(kCuMemFreeAsync, "cuMemFreeAsync")                           \
  X(kCuMemCreate, "cuMemCreate")                                 \
  X(kCuMemRelease, "cuMemRelease")                               \
  X(kCuMemAddressReserve, "cuMemAddressReserve")                 \
  X(kCuMemAddressFree, "cuMemAddressFree")                       \
  X(kCuMemMap, "cuMemMap")                                       \
  X(kCuMemUnmap, "cuMemUnmap")                                   \
  X(kCuArrayCreate, "cuArrayCreate")                             \
  X(kCuArray3DCreate, "cuArray3DCreate")                         \
  X(kCuArrayDestroy, "cuArrayDestroy")                           \
  X(kCuMipmappedArrayCreate, "cuMipmappedArrayCreate")           \
  X(kCuMipmappedArrayDestroy, "cuMipmappedArrayDestroy")         \
  X(kCuGraphAddMemAllocNode, "cuGraphAddMemAllocNode")           \
  X(kCuGraphAddMemFreeNode, "cuGraphAddMemFreeNode")             \
  X(kCuIpcOpenMemHandle, "cuIpcOpenMemHandle")                   \
  X(kCuIpcCloseMemHandle, "cuIpcCloseMemHandle")                 \
  X(kCuCtxDestroy, "cuCtxDestroy")                               \
  X(kCuDevicePrimaryCtxReset, "cuDevicePrimaryCtxReset")         \
  X(kCuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease")     \
  X(kCudaMalloc, "cudaMalloc")                                   \
  X(kCudaFree, "cudaFree")                                       \
  X(kCuMemRetainAllocationHandle, "cuMemRetainAllocationHandle") \
  X(kCuMemPoolCreate, "cuMemPoolCreate")                         \
  X(kCuMemPoolDestroy, "cuMemPoolDestroy")                       \
  X(kCuMemPoolTrimTo, "cuMemPoolTrimTo")                         \
  X(kCudaMallocPitch, "cudaMallocPitch")                         \
  X(kCudaMalloc3D, "cudaMalloc3D")                               \
  X(kCudaMallocManaged, "cudaMallocManaged")                     \
  X(kCudaMallocHost, "cudaMallocHost")                           \
  X(kCudaHostAlloc, "cudaHostAlloc")                             \
  X(kCudaFreeHost, "cudaFreeHost")                               \
  X(kCudaHostRegister, "cudaHostRegister")                       \
  X(kCudaHostUnregister, "cudaHostUnregister")                   \
  X(kCudaMallocAsync, "cudaMallocAsync")                         \
  X(kCudaFreeAsync, "cudaFreeAsync")                             \
  X(kCudaMallocFromPoolAsync, "cudaMallocFromPoolAsync")         \
  X(kCudaMallocArray, "cudaMallocArray")                         \
  X(kCudaMalloc3DArray, "cudaMalloc3DArray")                     \
  X(kCudaMallocMipmappedArray, "cudaMallocMipmappedArray")       \
  X(kCudaFreeArray, "cudaFreeArray")                             \
  X(kCudaFreeMipmappedArray, "cudaFreeMipmappedArray")           \
  X(kCudaMemPoolCreate, "cudaMemPoolCreate")                     \
  X(kCudaMemPoolDestroy, "cudaMemPoolDestroy")                   \
  X(kCudaMemPoolTrimTo, "cudaMemPoolTrimTo")                     \
  X(kCudaIpcOpenMemHandle, "cudaIpcOpenMemHandle")               \
  X(kCudaIpcCloseMemHandle, "cudaIpcCloseMemHandle")             \
  X(kCudaDeviceReset, "cudaDeviceReset")

#define GMT_API_ENUMERATOR(id, name) id,
enum class Api : uint16_t { GMT_API_LIST(GMT_API_ENUMERATOR) kCount };
#undef GMT_API_ENUMERATOR

std::string_view api_name(Api api);

// The name a user knows an event by: the runtime API the program called when the driver call
// came through one (a record's `public_api`), else the driver entry point.
inline Api called_api(Api driver_api, Api public_api) {
  return public_api != Api::kUnknown ? public_api : driver_api;
}
// Inline: the reader calls it for every event record.
inline std::optional<Api> api_from_raw(uint64_t raw) {
  if (raw >= static_cast<uint64_t>(Api::kCount)) return std::nullopt;
  return static_cast<Api>(raw);
}

}  // namespace gmt::format
