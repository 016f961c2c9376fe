// SPDX-License-Identifier: Apache-2.0
// The driver entry points we wrap, each one ABI: `cuMemAlloc` (32-bit, CUDA 2.0) and
// `cuMemAlloc_v2` are different functions with different arguments, and the wrapper handed
// out must match the function the driver handed out, exactly. Named by their exported symbols.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gmt::interpose {

// Wrapped: each has a wrapper gmt_<name> with the same ABI, and an exported alias <name>.
#define GMT_DRIVER_ENTRY_POINTS(X) \
  X(cuGetProcAddress)              \
  X(cuGetProcAddress_v2)           \
  X(cuMemAlloc)                    \
  X(cuMemAlloc_v2)                 \
  X(cuMemAllocPitch)               \
  X(cuMemAllocPitch_v2)            \
  X(cuMemAllocManaged)             \
  X(cuMemFree)                     \
  X(cuMemFree_v2)                  \
  X(cuMemAllocHost)                \
  X(cuMemAllocHost_v2)             \
  X(cuMemHostAlloc)                \
  X(cuMemFreeHost)                 \
  X(cuMemHostRegister)             \
  X(cuMemHostRegister_v2)          \
  X(cuMemHostUnregister)           \
  X(cuMemAllocAsync)               \
  X(cuMemAllocAsync_ptsz)          \
  X(cuMemAllocFromPoolAsync)       \
  X(cuMemAllocFromPoolAsync_ptsz)  \
  X(cuMemFreeAsync)                \
  X(cuMemFreeAsync_ptsz)           \
  X(cuMemPoolCreate)               \
  X(cuMemPoolDestroy)              \
  X(cuMemPoolTrimTo)               \
  X(cuMemCreate)                   \
  X(cuMemRelease)                  \
  X(cuMemRetainAllocationHandle)   \
  X(cuMemAddressReserve)           \
  X(cuMemAddressFree)              \
  X(cuMemMap)                      \
  X(cuMemUnmap)                    \
  X(cuArrayCreate)                 \
  X(cuArrayCreate_v2)              \
  X(cuArray3DCreate)               \
  X(cuArray3DCreate_v2)            \
  X(cuArrayDestroy)                \
  X(cuMipmappedArrayCreate)        \
  X(cuMipmappedArrayDestroy)       \
  X(cuGraphAddMemAllocNode)        \
  X(cuGraphAddMemFreeNode)         \
  X(cuIpcOpenMemHandle)            \
  X(cuIpcOpenMemHandle_v2)         \
  X(cuIpcCloseMemHandle)           \
  X(cuCtxDestroy)                  \
  X(cuCtxDestroy_v2)               \
  X(cuDevicePrimaryCtxRelease)     \
  X(cuDevicePrimaryCtxRelease_v2)  \
  X(cuDevicePrimaryCtxReset)       \
  X(cuDevicePrimaryCtxReset_v2)

// Not wrapped: what the hooks ask the driver themselves.
#define GMT_DRIVER_QUERIES(X)     \
  X(cuCtxGetCurrent)              \
  X(cuCtxGetDevice)               \
  X(cuDevicePrimaryCtxGetState)   \
  X(cuDevicePrimaryCtxRetain)     \
  X(cuDevicePrimaryCtxRelease_v2) \
  X(cuMemGetAddressRange_v2)      \
  X(cuDeviceGet)                  \
  X(cuDeviceGetPCIBusId)          \
  X(cuDeviceTotalMem_v2)          \
  X(cuCtxPushCurrent_v2)          \
  X(cuCtxPopCurrent_v2)           \
  X(cuMemGetInfo_v2)              \
  X(cuDeviceGetMemPool)           \
  X(cuMemPoolGetAttribute)        \
  X(cuDeviceGetGraphMemAttribute)

#define GMT_ENUMERATOR(name) name,
enum class EntryPoint : std::size_t { GMT_DRIVER_ENTRY_POINTS(GMT_ENUMERATOR) kCount };
enum class DriverQuery : std::size_t { GMT_DRIVER_QUERIES(GMT_ENUMERATOR) kCount };
#undef GMT_ENUMERATOR

class DriverEntryPoints {
 public:
  // The driver's own function, or nullptr while libcuda is not loaded.
  void* real(EntryPoint ep);
  void* query(DriverQuery q);

  template <class Fn>
  Fn real_as(EntryPoint ep) {
    return reinterpret_cast<Fn>(real(ep));
  }
  template <class Fn>
  Fn query_as(DriverQuery q) {
    return reinterpret_cast<Fn>(query(q));
  }

  // Given a function the driver handed out (by dlsym or cuGetProcAddress), our wrapper for
  // exactly that ABI; anything we do not track comes back untouched.
  void* wrap(void* driver_function);

 private:
  static constexpr std::size_t kEntryPoints = static_cast<std::size_t>(EntryPoint::kCount);
  static constexpr std::size_t kQueries = static_cast<std::size_t>(DriverQuery::kCount);

  void resolve();

  std::atomic<void*> real_[kEntryPoints] = {};
  std::atomic<void*> queries_[kQueries] = {};
  std::atomic<bool> resolved_{false};
};

}  // namespace gmt::interpose
