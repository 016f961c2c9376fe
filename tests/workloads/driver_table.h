// SPDX-License-Identifier: Apache-2.0
// The driver functions kind_ops calls, and how it got them. driver_table.cpp fills the table by
// exactly one of the paths real programs take into the driver, chosen at compile time:
//
//   KIND_OPS_LINKED               exported symbols of a program linked with -lcuda
//   KIND_OPS_DLSYM                dlopen("libcuda.so.1") + dlsym of the versioned names
//                                 ("cuMemAlloc_v2"), as CuPy and XLA do
//   KIND_OPS_PROCADDRESS_11030    "cuGetProcAddress" asked for at 11030 (the 4-argument ABI),
//                                 then everything through it at 11030, as JAX does
//   KIND_OPS_PROCADDRESS_12000    cuGetProcAddress_v2 asked for itself at 12000, then everything
//                                 at 12000, as cudart, NCCL and cuBLAS do
//   KIND_OPS_PER_THREAD           as 12000, but every lookup with the per-thread default stream
//                                 flag (code built with --default-stream per-thread)
//   KIND_OPS_RUNTIME_ENTRY_POINT  cudaGetDriverEntryPointByVersion(…, 12000, …) of the shared
//                                 runtime, as PyTorch and NCCL get cuMemCreate & co.
//
// The *_ptsz members always hold the per-thread-stream flavour, fetched through the path's own
// cuGetProcAddress with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (or the runtime's
// cudaEnablePerThreadDefaultStream).
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

namespace workload {

struct DriverTable {
  const char* path = "";
  PFN_cuInit_v2000 init = nullptr;
  PFN_cuDevicePrimaryCtxRetain_v7000 primary_retain = nullptr;
  PFN_cuDevicePrimaryCtxRelease_v11000 primary_release = nullptr;
  PFN_cuDevicePrimaryCtxReset_v11000 primary_reset = nullptr;
  PFN_cuCtxSetCurrent_v4000 ctx_set_current = nullptr;
  // cuCtxCreate changed its ABI at 11040 and 12050: which one a path gets depends on the version
  // it asks for, so the function is kept with the version of its ABI (see create_context).
  void* ctx_create = nullptr;
  int ctx_create_abi = 0;  // 3020, 11040 or 12050
  PFN_cuCtxDestroy_v4000 ctx_destroy = nullptr;

  PFN_cuMemAlloc_v3020 mem_alloc = nullptr;
  PFN_cuMemAllocPitch_v3020 mem_alloc_pitch = nullptr;
  PFN_cuMemAllocManaged_v6000 mem_alloc_managed = nullptr;
  PFN_cuMemFree_v3020 mem_free = nullptr;

  PFN_cuMemAllocHost_v3020 mem_alloc_host = nullptr;
  PFN_cuMemHostAlloc_v2020 mem_host_alloc = nullptr;
  PFN_cuMemFreeHost_v2000 mem_free_host = nullptr;
  PFN_cuMemHostRegister_v6050 mem_host_register = nullptr;
  PFN_cuMemHostUnregister_v4000 mem_host_unregister = nullptr;

  PFN_cuMemAllocAsync_v11020 mem_alloc_async = nullptr;
  PFN_cuMemAllocAsync_v11020_ptsz mem_alloc_async_ptsz = nullptr;
  PFN_cuMemFreeAsync_v11020 mem_free_async = nullptr;
  PFN_cuMemFreeAsync_v11020_ptsz mem_free_async_ptsz = nullptr;
  PFN_cuMemAllocFromPoolAsync_v11020 mem_alloc_from_pool_async = nullptr;
  PFN_cuMemAllocFromPoolAsync_v11020_ptsz mem_alloc_from_pool_async_ptsz = nullptr;
  PFN_cuMemPoolCreate_v11020 mem_pool_create = nullptr;
  PFN_cuMemPoolDestroy_v11020 mem_pool_destroy = nullptr;
  PFN_cuMemPoolTrimTo_v11020 mem_pool_trim_to = nullptr;

  PFN_cuMemCreate_v10020 mem_create = nullptr;
  PFN_cuMemRelease_v10020 mem_release = nullptr;
  PFN_cuMemRetainAllocationHandle_v11000 mem_retain_allocation_handle = nullptr;
  PFN_cuMemAddressReserve_v10020 mem_address_reserve = nullptr;
  PFN_cuMemAddressFree_v10020 mem_address_free = nullptr;
  PFN_cuMemMap_v10020 mem_map = nullptr;
  PFN_cuMemUnmap_v10020 mem_unmap = nullptr;

  PFN_cuArrayCreate_v3020 array_create = nullptr;
  PFN_cuArray3DCreate_v3020 array_3d_create = nullptr;
  PFN_cuArrayDestroy_v2000 array_destroy = nullptr;
  PFN_cuMipmappedArrayCreate_v5000 mipmapped_array_create = nullptr;
  PFN_cuMipmappedArrayDestroy_v5000 mipmapped_array_destroy = nullptr;

  PFN_cuGraphCreate_v10000 graph_create = nullptr;
  PFN_cuGraphAddMemAllocNode_v11040 graph_add_mem_alloc_node = nullptr;
  PFN_cuGraphAddMemFreeNode_v11040 graph_add_mem_free_node = nullptr;
  PFN_cuGraphDestroy_v10000 graph_destroy = nullptr;

  PFN_cuIpcGetMemHandle_v4010 ipc_get_mem_handle = nullptr;
  PFN_cuIpcOpenMemHandle_v11000 ipc_open_mem_handle = nullptr;
  PFN_cuIpcCloseMemHandle_v4010 ipc_close_mem_handle = nullptr;
};

// Fills the table through this build's path; dies if any function cannot be found.
DriverTable load_driver_table();

// cuCtxCreate through whichever ABI the table holds, with no extra parameters.
CUresult create_context(const DriverTable& driver, CUcontext* ctx, CUdevice device);

}  // namespace workload
