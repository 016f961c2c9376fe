// SPDX-License-Identifier: Apache-2.0
// How the runtime reaches the driver, exactly like the real cudart: once, on the first call,
// dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), dlsym "cuGetProcAddress_v2", ask it for
// "cuGetProcAddress" at cudaVersion 11030 (4-argument ABI) and 12000 (5-argument ABI), then
// resolve every other entry point through those pointers. libcuda is never linked.
#pragma once

#include "runtime/runtime_api.h"

namespace fakecuda::runtime {

// The cudaVersion this runtime asks the driver for (the newest ABIs it knows).
inline constexpr int kRuntimeVersion = CUDART_VERSION;

struct DriverEntryPoints {
  PFN_cuGetProcAddress_v11030 cuGetProcAddress_legacy;
  PFN_cuGetProcAddress_v12000 cuGetProcAddress;
  PFN_cuInit_v2000 cuInit;
  PFN_cuDriverGetVersion_v2020 cuDriverGetVersion;
  PFN_cuDeviceGetCount_v2000 cuDeviceGetCount;
  PFN_cuDevicePrimaryCtxRetain_v7000 cuDevicePrimaryCtxRetain;
  PFN_cuDevicePrimaryCtxReset_v11000 cuDevicePrimaryCtxReset;
  PFN_cuCtxGetCurrent_v4000 cuCtxGetCurrent;
  PFN_cuCtxSetCurrent_v4000 cuCtxSetCurrent;
  PFN_cuCtxSynchronize_v13000 cuCtxSynchronize;
  PFN_cuMemGetInfo_v3020 cuMemGetInfo;  // resolved through the 11030 (4-argument) ABI
  PFN_cuMemAlloc_v3020 cuMemAlloc;
  PFN_cuMemAllocPitch_v3020 cuMemAllocPitch;
  PFN_cuMemFree_v3020 cuMemFree;
  PFN_cuMemAllocManaged_v6000 cuMemAllocManaged;
  PFN_cuMemHostAlloc_v2020 cuMemHostAlloc;
  PFN_cuMemFreeHost_v2000 cuMemFreeHost;
  PFN_cuMemHostRegister_v6050 cuMemHostRegister;
  PFN_cuMemHostUnregister_v4000 cuMemHostUnregister;
  PFN_cuMemHostGetDevicePointer_v3020 cuMemHostGetDevicePointer;
  PFN_cuPointerGetAttribute_v4000 cuPointerGetAttribute;
  PFN_cuMemcpyHtoD_v3020 cuMemcpyHtoD;
  PFN_cuMemcpyHtoD_v3020 cuMemcpyHtoD_ptds;
  PFN_cuMemcpyDtoH_v3020 cuMemcpyDtoH;
  PFN_cuMemcpyDtoH_v3020 cuMemcpyDtoH_ptds;
  PFN_cuMemcpyDtoD_v3020 cuMemcpyDtoD;
  PFN_cuMemcpyDtoD_v3020 cuMemcpyDtoD_ptds;
  PFN_cuMemsetD8_v3020 cuMemsetD8;
  PFN_cuMemsetD8_v3020 cuMemsetD8_ptds;
  PFN_cuMemAllocAsync_v11020 cuMemAllocAsync;
  PFN_cuMemAllocAsync_v11020 cuMemAllocAsync_ptsz;
  PFN_cuMemFreeAsync_v11020 cuMemFreeAsync;
  PFN_cuMemFreeAsync_v11020 cuMemFreeAsync_ptsz;
  PFN_cuMemAllocFromPoolAsync_v11020 cuMemAllocFromPoolAsync;
  PFN_cuMemAllocFromPoolAsync_v11020 cuMemAllocFromPoolAsync_ptsz;
  PFN_cuMemPoolCreate_v11020 cuMemPoolCreate;
  PFN_cuMemPoolDestroy_v11020 cuMemPoolDestroy;
  PFN_cuMemPoolTrimTo_v11020 cuMemPoolTrimTo;
  PFN_cuMemPoolGetAttribute_v11020 cuMemPoolGetAttribute;
  PFN_cuMemPoolSetAttribute_v11020 cuMemPoolSetAttribute;
  PFN_cuDeviceGetDefaultMemPool_v11020 cuDeviceGetDefaultMemPool;
  PFN_cuDeviceGetMemPool_v11020 cuDeviceGetMemPool;
  PFN_cuDeviceSetMemPool_v11020 cuDeviceSetMemPool;
  PFN_cuArrayCreate_v3020 cuArrayCreate;
  PFN_cuArray3DCreate_v3020 cuArray3DCreate;
  PFN_cuArrayDestroy_v2000 cuArrayDestroy;
  PFN_cuMipmappedArrayCreate_v5000 cuMipmappedArrayCreate;
  PFN_cuMipmappedArrayDestroy_v5000 cuMipmappedArrayDestroy;
  PFN_cuStreamCreate_v2000 cuStreamCreate;
  PFN_cuStreamDestroy_v4000 cuStreamDestroy;
  PFN_cuStreamSynchronize_v2000 cuStreamSynchronize;
  PFN_cuStreamSynchronize_v2000 cuStreamSynchronize_ptsz;
  PFN_cuGraphCreate_v10000 cuGraphCreate;
  PFN_cuGraphDestroy_v10000 cuGraphDestroy;
  PFN_cuGraphAddMemAllocNode_v11040 cuGraphAddMemAllocNode;
  PFN_cuGraphAddMemFreeNode_v11040 cuGraphAddMemFreeNode;
  PFN_cuGraphInstantiateWithFlags_v11040 cuGraphInstantiate;  // "cuGraphInstantiate" >= 12.0
  PFN_cuGraphExecDestroy_v10000 cuGraphExecDestroy;
  PFN_cuGraphLaunch_v10000 cuGraphLaunch;
  PFN_cuGraphLaunch_v10000 cuGraphLaunch_ptsz;
  PFN_cuDeviceGraphMemTrim_v11040 cuDeviceGraphMemTrim;
  PFN_cuDeviceGetGraphMemAttribute_v11040 cuDeviceGetGraphMemAttribute;
  PFN_cuIpcGetMemHandle_v4010 cuIpcGetMemHandle;
  PFN_cuIpcOpenMemHandle_v11000 cuIpcOpenMemHandle;
  PFN_cuIpcCloseMemHandle_v4010 cuIpcCloseMemHandle;
};

// Loads the driver on first use. cudaErrorInsufficientDriver when libcuda.so.1 or one of the
// entry points is missing, cudaErrorNoDevice when cuInit finds no device.
cudaError_t load_driver();

// Valid after load_driver() returned cudaSuccess.
const DriverEntryPoints& driver();

}  // namespace fakecuda::runtime
