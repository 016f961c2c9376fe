// SPDX-License-Identifier: Apache-2.0
#include "driver_table.h"

#include <dlfcn.h>

#include <algorithm>
#include <string>

#include "op_line.h"

#if defined(KIND_OPS_RUNTIME_ENTRY_POINT)
#include <cuda_runtime_api.h>
#endif

namespace workload {
namespace {

// X(member, name for cuGetProcAddress, exported versioned symbol, version of the member's ABI).
// The version matters only where it is newer than what a path asks for: the graph memory node
// functions appeared in 11040, so the 11030 path asks for those (and only those) at 11040.
#define KIND_OPS_DRIVER_FUNCTIONS(X)                                                          \
  X(init, "cuInit", cuInit, 2000)                                                             \
  X(primary_retain, "cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain, 7000)               \
  X(primary_release, "cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease_v2, 11000)        \
  X(primary_reset, "cuDevicePrimaryCtxReset", cuDevicePrimaryCtxReset_v2, 11000)              \
  X(ctx_set_current, "cuCtxSetCurrent", cuCtxSetCurrent, 4000)                                \
  X(ctx_destroy, "cuCtxDestroy", cuCtxDestroy_v2, 4000)                                       \
  X(mem_alloc, "cuMemAlloc", cuMemAlloc_v2, 3020)                                             \
  X(mem_alloc_pitch, "cuMemAllocPitch", cuMemAllocPitch_v2, 3020)                             \
  X(mem_alloc_managed, "cuMemAllocManaged", cuMemAllocManaged, 6000)                          \
  X(mem_free, "cuMemFree", cuMemFree_v2, 3020)                                                \
  X(mem_alloc_host, "cuMemAllocHost", cuMemAllocHost_v2, 3020)                                \
  X(mem_host_alloc, "cuMemHostAlloc", cuMemHostAlloc, 2020)                                   \
  X(mem_free_host, "cuMemFreeHost", cuMemFreeHost, 2000)                                      \
  X(mem_host_register, "cuMemHostRegister", cuMemHostRegister_v2, 6050)                       \
  X(mem_host_unregister, "cuMemHostUnregister", cuMemHostUnregister, 4000)                    \
  X(mem_alloc_async, "cuMemAllocAsync", cuMemAllocAsync, 11020)                               \
  X(mem_free_async, "cuMemFreeAsync", cuMemFreeAsync, 11020)                                  \
  X(mem_alloc_from_pool_async, "cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync, 11020)     \
  X(mem_pool_create, "cuMemPoolCreate", cuMemPoolCreate, 11020)                               \
  X(mem_pool_destroy, "cuMemPoolDestroy", cuMemPoolDestroy, 11020)                            \
  X(mem_pool_trim_to, "cuMemPoolTrimTo", cuMemPoolTrimTo, 11020)                              \
  X(mem_create, "cuMemCreate", cuMemCreate, 10020)                                            \
  X(mem_release, "cuMemRelease", cuMemRelease, 10020)                                         \
  X(mem_retain_allocation_handle, "cuMemRetainAllocationHandle", cuMemRetainAllocationHandle, \
    11000)                                                                                    \
  X(mem_address_reserve, "cuMemAddressReserve", cuMemAddressReserve, 10020)                   \
  X(mem_address_free, "cuMemAddressFree", cuMemAddressFree, 10020)                            \
  X(mem_map, "cuMemMap", cuMemMap, 10020)                                                     \
  X(mem_unmap, "cuMemUnmap", cuMemUnmap, 10020)                                               \
  X(array_create, "cuArrayCreate", cuArrayCreate_v2, 3020)                                    \
  X(array_3d_create, "cuArray3DCreate", cuArray3DCreate_v2, 3020)                             \
  X(array_destroy, "cuArrayDestroy", cuArrayDestroy, 2000)                                    \
  X(mipmapped_array_create, "cuMipmappedArrayCreate", cuMipmappedArrayCreate, 5000)           \
  X(mipmapped_array_destroy, "cuMipmappedArrayDestroy", cuMipmappedArrayDestroy, 5000)        \
  X(graph_create, "cuGraphCreate", cuGraphCreate, 10000)                                      \
  X(graph_add_mem_alloc_node, "cuGraphAddMemAllocNode", cuGraphAddMemAllocNode, 11040)        \
  X(graph_add_mem_free_node, "cuGraphAddMemFreeNode", cuGraphAddMemFreeNode, 11040)           \
  X(graph_destroy, "cuGraphDestroy", cuGraphDestroy, 10000)                                   \
  X(ipc_get_mem_handle, "cuIpcGetMemHandle", cuIpcGetMemHandle, 4010)                         \
  X(ipc_open_mem_handle, "cuIpcOpenMemHandle", cuIpcOpenMemHandle_v2, 11000)                  \
  X(ipc_close_mem_handle, "cuIpcCloseMemHandle", cuIpcCloseMemHandle, 4010)

// The per-thread-stream flavours, always asked for with the per-thread flag.
#define KIND_OPS_PER_THREAD_FUNCTIONS(X)            \
  X(mem_alloc_async_ptsz, "cuMemAllocAsync", 11020) \
  X(mem_free_async_ptsz, "cuMemFreeAsync", 11020)   \
  X(mem_alloc_from_pool_async_ptsz, "cuMemAllocFromPoolAsync", 11020)

#if defined(KIND_OPS_LINKED)
constexpr const char* kPath = "linked";
constexpr int kVersion = 13000;  // what cuda.h's names map to
#elif defined(KIND_OPS_DLSYM)
constexpr const char* kPath = "dlsym";
[[maybe_unused]] constexpr int kVersion = 0;  // versioned names, no cudaVersion
#elif defined(KIND_OPS_PROCADDRESS_11030)
constexpr const char* kPath = "procaddress_11030";
constexpr int kVersion = 11030;
#elif defined(KIND_OPS_PROCADDRESS_12000)
constexpr const char* kPath = "procaddress_12000";
constexpr int kVersion = 12000;
#elif defined(KIND_OPS_PER_THREAD)
constexpr const char* kPath = "per_thread";
constexpr int kVersion = 12000;
#elif defined(KIND_OPS_RUNTIME_ENTRY_POINT)
constexpr const char* kPath = "runtime_entry_point";
constexpr int kVersion = 12000;
#else
#error "choose a KIND_OPS_* path for driver_table.cpp"
#endif

template <class Fn>
void* as_void(Fn* function) {
  return reinterpret_cast<void*>(function);
}

[[maybe_unused]] void* open_libcuda() {
  void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (libcuda == nullptr) die(std::string("dlopen libcuda.so.1: ") + dlerror());
  return libcuda;
}

// A path's cuGetProcAddress with the 5-argument signature (the 4-argument ABI is adapted).
struct ProcAddress {
  PFN_cuGetProcAddress_v12000 v2 = nullptr;
  PFN_cuGetProcAddress_v11030 v1 = nullptr;

  void* get(const char* name, int version, bool per_thread) const {
    void* fn = nullptr;
    const cuuint64_t flags =
        per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
    CUdriverProcAddressQueryResult status{};
    const CUresult r =
        v2 != nullptr ? v2(name, &fn, version, flags, &status) : v1(name, &fn, version, flags);
    if (r != CUDA_SUCCESS || fn == nullptr) {
      die(std::string("cuGetProcAddress ") + name + " at " + std::to_string(version) + " failed");
    }
    return fn;
  }
};

// cuGetProcAddress_v2 as a program that dlopens the driver finds it.
[[maybe_unused]] PFN_cuGetProcAddress_v12000 dlsym_get_proc_address_v2(void* libcuda) {
  auto fn = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(libcuda, "cuGetProcAddress_v2"));
  if (fn == nullptr) die("dlsym cuGetProcAddress_v2");
  return fn;
}

#if defined(KIND_OPS_PROCADDRESS_11030) || defined(KIND_OPS_PROCADDRESS_12000) || \
    defined(KIND_OPS_PER_THREAD)
// What cudart does: ask cuGetProcAddress_v2 for "cuGetProcAddress" itself, at the version whose
// ABI it wants, and use the answer from then on.
ProcAddress path_proc_address() {
  PFN_cuGetProcAddress_v12000 bootstrap = dlsym_get_proc_address_v2(open_libcuda());
  void* self = nullptr;
  CUdriverProcAddressQueryResult status{};
  if (bootstrap("cuGetProcAddress", &self, kVersion, 0, &status) != CUDA_SUCCESS ||
      self == nullptr) {
    die("cuGetProcAddress for itself at " + std::to_string(kVersion));
  }
  ProcAddress p;
  if (kVersion < 12000) {
    p.v1 = reinterpret_cast<PFN_cuGetProcAddress_v11030>(self);
  } else {
    p.v2 = reinterpret_cast<PFN_cuGetProcAddress_v12000>(self);
  }
  return p;
}
#endif

#if defined(KIND_OPS_RUNTIME_ENTRY_POINT)
void* runtime_entry_point(const char* name, int version, bool per_thread) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status{};
  const cudaError_t e = cudaGetDriverEntryPointByVersion(
      name, &fn, static_cast<unsigned>(version),
      per_thread ? cudaEnablePerThreadDefaultStream : cudaEnableDefault, &status);
  if (e != cudaSuccess || fn == nullptr)
    die(std::string("cudaGetDriverEntryPointByVersion ") + name);
  return fn;
}
#endif

[[maybe_unused]] int ctx_create_abi_at(int version) {
  if (version >= 12050) return 12050;
  if (version >= 11040) return 11040;
  return 3020;
}

}  // namespace

DriverTable load_driver_table() {
  DriverTable t;
  t.path = kPath;
#if defined(KIND_OPS_LINKED)
#define KIND_OPS_FILL(member, name, symbol, since) \
  t.member = reinterpret_cast<decltype(t.member)>(as_void(&symbol));
  KIND_OPS_DRIVER_FUNCTIONS(KIND_OPS_FILL)
#undef KIND_OPS_FILL
  t.ctx_create = as_void(&cuCtxCreate_v4);
  t.ctx_create_abi = 12050;
  // The per-thread flavours through the exported cuGetProcAddress_v2.
  const ProcAddress per_thread{&cuGetProcAddress_v2, nullptr};
#define KIND_OPS_FILL_PT(member, name, since) \
  t.member = reinterpret_cast<decltype(t.member)>(per_thread.get(name, kVersion, true));
  KIND_OPS_PER_THREAD_FUNCTIONS(KIND_OPS_FILL_PT)
#undef KIND_OPS_FILL_PT
#elif defined(KIND_OPS_DLSYM)
  void* libcuda = open_libcuda();
  auto sym = [&](const char* name) {
    void* fn = dlsym(libcuda, name);
    if (fn == nullptr) die(std::string("dlsym ") + name);
    return fn;
  };
#define KIND_OPS_FILL(member, name, symbol, since) \
  t.member = reinterpret_cast<decltype(t.member)>(sym(#symbol));
  KIND_OPS_DRIVER_FUNCTIONS(KIND_OPS_FILL)
#undef KIND_OPS_FILL
  t.ctx_create = sym("cuCtxCreate_v2");
  t.ctx_create_abi = 3020;
  const ProcAddress per_thread{dlsym_get_proc_address_v2(libcuda), nullptr};
#define KIND_OPS_FILL_PT(member, name, since) \
  t.member = reinterpret_cast<decltype(t.member)>(per_thread.get(name, 12000, true));
  KIND_OPS_PER_THREAD_FUNCTIONS(KIND_OPS_FILL_PT)
#undef KIND_OPS_FILL_PT
#else
#if defined(KIND_OPS_RUNTIME_ENTRY_POINT)
  auto get = [](const char* name, int version, bool per_thread) {
    return runtime_entry_point(name, version, per_thread);
  };
#else
  const ProcAddress proc = path_proc_address();
  auto get = [&](const char* name, int version, bool per_thread) {
    return proc.get(name, version, per_thread);
  };
#endif
#if defined(KIND_OPS_PER_THREAD)
  constexpr bool kPerThreadEverywhere = true;
#else
  constexpr bool kPerThreadEverywhere = false;
#endif
#define KIND_OPS_FILL(member, name, symbol, since) \
  t.member = reinterpret_cast<decltype(t.member)>( \
      get(name, std::max(kVersion, since), kPerThreadEverywhere));
  KIND_OPS_DRIVER_FUNCTIONS(KIND_OPS_FILL)
#undef KIND_OPS_FILL
#define KIND_OPS_FILL_PT(member, name, since) \
  t.member = reinterpret_cast<decltype(t.member)>(get(name, std::max(kVersion, since), true));
  KIND_OPS_PER_THREAD_FUNCTIONS(KIND_OPS_FILL_PT)
#undef KIND_OPS_FILL_PT
  t.ctx_create = get("cuCtxCreate", kVersion, kPerThreadEverywhere);
  t.ctx_create_abi = ctx_create_abi_at(kVersion);
#endif
  if (t.init(0) != CUDA_SUCCESS) die("cuInit failed");
  return t;
}

CUresult create_context(const DriverTable& driver, CUcontext* ctx, CUdevice device) {
  switch (driver.ctx_create_abi) {
    case 3020:
      return reinterpret_cast<PFN_cuCtxCreate_v3020>(driver.ctx_create)(ctx, 0, device);
    case 11040:
      return reinterpret_cast<PFN_cuCtxCreate_v11040>(driver.ctx_create)(ctx, nullptr, 0, 0,
                                                                         device);
    default:
      return reinterpret_cast<PFN_cuCtxCreate_v12050>(driver.ctx_create)(ctx, nullptr, 0, device);
  }
}

}  // namespace workload
