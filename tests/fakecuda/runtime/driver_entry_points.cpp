// SPDX-License-Identifier: Apache-2.0
#include "runtime/driver_entry_points.h"

#include <dlfcn.h>

#include <mutex>

namespace fakecuda::runtime {
namespace {

DriverEntryPoints g_driver{};
cudaError_t g_load_status = cudaErrorInsufficientDriver;
std::once_flag g_load_once;

// Resolves `name` at this runtime's version through the 12000 ABI, as the real cudart does.
template <typename F>
bool resolve(PFN_cuGetProcAddress_v12000 get_proc_address, const char* name, cuuint64_t flags,
             F* out) {
  void* function = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = get_proc_address(name, &function, kRuntimeVersion, flags, &status);
  *out = reinterpret_cast<F>(function);
  return r == CUDA_SUCCESS && status == CU_GET_PROC_ADDRESS_SUCCESS && function != nullptr;
}

template <typename F>
bool resolve(PFN_cuGetProcAddress_v12000 get_proc_address, const char* name, F* out) {
  return resolve(get_proc_address, name, CU_GET_PROC_ADDRESS_DEFAULT, out);
}

template <typename F>
bool resolve_per_thread(PFN_cuGetProcAddress_v12000 get_proc_address, const char* name, F* out) {
  return resolve(get_proc_address, name, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, out);
}

bool resolve_all(DriverEntryPoints& d) {
  // The 4-argument ABI has no status; a NULL pointer means "not found".
  void* mem_get_info = nullptr;
  if (d.cuGetProcAddress_legacy("cuMemGetInfo", &mem_get_info, kRuntimeVersion,
                                CU_GET_PROC_ADDRESS_LEGACY_STREAM) != CUDA_SUCCESS ||
      mem_get_info == nullptr) {
    return false;
  }
  d.cuMemGetInfo = reinterpret_cast<PFN_cuMemGetInfo_v3020>(mem_get_info);

  auto* gpa = d.cuGetProcAddress;
  bool ok = true;
  ok &= resolve(gpa, "cuInit", &d.cuInit);
  ok &= resolve(gpa, "cuDriverGetVersion", &d.cuDriverGetVersion);
  ok &= resolve(gpa, "cuDeviceGetCount", &d.cuDeviceGetCount);
  ok &= resolve(gpa, "cuDevicePrimaryCtxRetain", &d.cuDevicePrimaryCtxRetain);
  ok &= resolve(gpa, "cuDevicePrimaryCtxReset", &d.cuDevicePrimaryCtxReset);
  ok &= resolve(gpa, "cuCtxGetCurrent", &d.cuCtxGetCurrent);
  ok &= resolve(gpa, "cuCtxSetCurrent", &d.cuCtxSetCurrent);
  ok &= resolve(gpa, "cuCtxSynchronize", &d.cuCtxSynchronize);
  ok &= resolve(gpa, "cuMemAlloc", &d.cuMemAlloc);
  ok &= resolve(gpa, "cuMemAllocPitch", &d.cuMemAllocPitch);
  ok &= resolve(gpa, "cuMemFree", &d.cuMemFree);
  ok &= resolve(gpa, "cuMemAllocManaged", &d.cuMemAllocManaged);
  ok &= resolve(gpa, "cuMemHostAlloc", &d.cuMemHostAlloc);
  ok &= resolve(gpa, "cuMemFreeHost", &d.cuMemFreeHost);
  ok &= resolve(gpa, "cuMemHostRegister", &d.cuMemHostRegister);
  ok &= resolve(gpa, "cuMemHostUnregister", &d.cuMemHostUnregister);
  ok &= resolve(gpa, "cuMemHostGetDevicePointer", &d.cuMemHostGetDevicePointer);
  ok &= resolve(gpa, "cuPointerGetAttribute", &d.cuPointerGetAttribute);
  ok &= resolve(gpa, "cuMemcpyHtoD", &d.cuMemcpyHtoD);
  ok &= resolve_per_thread(gpa, "cuMemcpyHtoD", &d.cuMemcpyHtoD_ptds);
  ok &= resolve(gpa, "cuMemcpyDtoH", &d.cuMemcpyDtoH);
  ok &= resolve_per_thread(gpa, "cuMemcpyDtoH", &d.cuMemcpyDtoH_ptds);
  ok &= resolve(gpa, "cuMemcpyDtoD", &d.cuMemcpyDtoD);
  ok &= resolve_per_thread(gpa, "cuMemcpyDtoD", &d.cuMemcpyDtoD_ptds);
  ok &= resolve(gpa, "cuMemsetD8", &d.cuMemsetD8);
  ok &= resolve_per_thread(gpa, "cuMemsetD8", &d.cuMemsetD8_ptds);
  ok &= resolve(gpa, "cuMemAllocAsync", &d.cuMemAllocAsync);
  ok &= resolve_per_thread(gpa, "cuMemAllocAsync", &d.cuMemAllocAsync_ptsz);
  ok &= resolve(gpa, "cuMemFreeAsync", &d.cuMemFreeAsync);
  ok &= resolve_per_thread(gpa, "cuMemFreeAsync", &d.cuMemFreeAsync_ptsz);
  ok &= resolve(gpa, "cuMemAllocFromPoolAsync", &d.cuMemAllocFromPoolAsync);
  ok &= resolve_per_thread(gpa, "cuMemAllocFromPoolAsync", &d.cuMemAllocFromPoolAsync_ptsz);
  ok &= resolve(gpa, "cuMemPoolCreate", &d.cuMemPoolCreate);
  ok &= resolve(gpa, "cuMemPoolDestroy", &d.cuMemPoolDestroy);
  ok &= resolve(gpa, "cuMemPoolTrimTo", &d.cuMemPoolTrimTo);
  ok &= resolve(gpa, "cuMemPoolGetAttribute", &d.cuMemPoolGetAttribute);
  ok &= resolve(gpa, "cuMemPoolSetAttribute", &d.cuMemPoolSetAttribute);
  ok &= resolve(gpa, "cuDeviceGetDefaultMemPool", &d.cuDeviceGetDefaultMemPool);
  ok &= resolve(gpa, "cuDeviceGetMemPool", &d.cuDeviceGetMemPool);
  ok &= resolve(gpa, "cuDeviceSetMemPool", &d.cuDeviceSetMemPool);
  ok &= resolve(gpa, "cuArrayCreate", &d.cuArrayCreate);
  ok &= resolve(gpa, "cuArray3DCreate", &d.cuArray3DCreate);
  ok &= resolve(gpa, "cuArrayDestroy", &d.cuArrayDestroy);
  ok &= resolve(gpa, "cuMipmappedArrayCreate", &d.cuMipmappedArrayCreate);
  ok &= resolve(gpa, "cuMipmappedArrayDestroy", &d.cuMipmappedArrayDestroy);
  ok &= resolve(gpa, "cuStreamCreate", &d.cuStreamCreate);
  ok &= resolve(gpa, "cuStreamDestroy", &d.cuStreamDestroy);
  ok &= resolve(gpa, "cuStreamSynchronize", &d.cuStreamSynchronize);
  ok &= resolve_per_thread(gpa, "cuStreamSynchronize", &d.cuStreamSynchronize_ptsz);
  ok &= resolve(gpa, "cuGraphCreate", &d.cuGraphCreate);
  ok &= resolve(gpa, "cuGraphDestroy", &d.cuGraphDestroy);
  ok &= resolve(gpa, "cuGraphAddMemAllocNode", &d.cuGraphAddMemAllocNode);
  ok &= resolve(gpa, "cuGraphAddMemFreeNode", &d.cuGraphAddMemFreeNode);
  ok &= resolve(gpa, "cuGraphInstantiate", &d.cuGraphInstantiate);
  ok &= resolve(gpa, "cuGraphExecDestroy", &d.cuGraphExecDestroy);
  ok &= resolve(gpa, "cuGraphLaunch", &d.cuGraphLaunch);
  ok &= resolve_per_thread(gpa, "cuGraphLaunch", &d.cuGraphLaunch_ptsz);
  ok &= resolve(gpa, "cuDeviceGraphMemTrim", &d.cuDeviceGraphMemTrim);
  ok &= resolve(gpa, "cuDeviceGetGraphMemAttribute", &d.cuDeviceGetGraphMemAttribute);
  ok &= resolve(gpa, "cuIpcGetMemHandle", &d.cuIpcGetMemHandle);
  ok &= resolve(gpa, "cuIpcOpenMemHandle", &d.cuIpcOpenMemHandle);
  ok &= resolve(gpa, "cuIpcCloseMemHandle", &d.cuIpcCloseMemHandle);
  return ok;
}

cudaError_t load() {
  // Never closed: the real cudart keeps libcuda for the life of the process too.
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return cudaErrorInsufficientDriver;
  auto entry = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(handle, "cuGetProcAddress_v2"));
  if (entry == nullptr) return cudaErrorInsufficientDriver;

  DriverEntryPoints d{};
  void* legacy = nullptr;
  void* current = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (entry("cuGetProcAddress", &legacy, 11030, CU_GET_PROC_ADDRESS_DEFAULT, &status) !=
          CUDA_SUCCESS ||
      legacy == nullptr) {
    return cudaErrorInsufficientDriver;
  }
  if (entry("cuGetProcAddress", &current, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status) !=
          CUDA_SUCCESS ||
      current == nullptr) {
    return cudaErrorInsufficientDriver;
  }
  d.cuGetProcAddress_legacy = reinterpret_cast<PFN_cuGetProcAddress_v11030>(legacy);
  d.cuGetProcAddress = reinterpret_cast<PFN_cuGetProcAddress_v12000>(current);
  if (!resolve_all(d)) return cudaErrorInsufficientDriver;

  CUresult init = d.cuInit(0);
  if (init == CUDA_ERROR_NO_DEVICE) return cudaErrorNoDevice;
  if (init != CUDA_SUCCESS) return cudaErrorInitializationError;
  g_driver = d;
  return cudaSuccess;
}

}  // namespace

cudaError_t load_driver() {
  std::call_once(g_load_once, [] { g_load_status = load(); });
  return g_load_status;
}

const DriverEntryPoints& driver() {
  return g_driver;
}

}  // namespace fakecuda::runtime
