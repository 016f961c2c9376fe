// SPDX-License-Identifier: Apache-2.0
#include "driver/procaddress_table.h"

#include "driver/driver_api.h"

namespace fakecuda {
namespace {

template <typename F>
void* address_of(F* function) {
  return reinterpret_cast<void*>(function);
}

#define ENTRY(name, version, function) \
  { name, version, address_of(&function), nullptr }
#define ENTRY_PT(name, version, function, per_thread) \
  { name, version, address_of(&function), address_of(&per_thread) }

// Keep in step with the exported functions: the self-test checks that every exported cu*
// symbol is reachable through cuGetProcAddress.
const ProcAddressEntry kTable[] = {
    // Initialization, version, errors.
    ENTRY("cuInit", 2000, cuInit),
    ENTRY("cuDriverGetVersion", 2020, cuDriverGetVersion),
    ENTRY("cuGetErrorName", 6000, cuGetErrorName),
    ENTRY("cuGetErrorString", 6000, cuGetErrorString),
    ENTRY("cuGetProcAddress", 11030, cuGetProcAddress),
    ENTRY("cuGetProcAddress", 12000, cuGetProcAddress_v2),

    // Devices.
    ENTRY("cuDeviceGet", 2000, cuDeviceGet),
    ENTRY("cuDeviceGetCount", 2000, cuDeviceGetCount),
    ENTRY("cuDeviceGetName", 2000, cuDeviceGetName),
    ENTRY("cuDeviceTotalMem", 2000, cuDeviceTotalMem),
    ENTRY("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
    ENTRY("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
    ENTRY("cuDeviceGetPCIBusId", 4010, cuDeviceGetPCIBusId),
    ENTRY("cuDeviceGetByPCIBusId", 4010, cuDeviceGetByPCIBusId),
    ENTRY("cuDeviceGetUuid", 9020, cuDeviceGetUuid),
    ENTRY("cuDeviceGetUuid", 11040, cuDeviceGetUuid_v2),

    // Primary contexts.
    ENTRY("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    ENTRY("cuDevicePrimaryCtxRelease", 7000, cuDevicePrimaryCtxRelease),
    ENTRY("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
    ENTRY("cuDevicePrimaryCtxReset", 7000, cuDevicePrimaryCtxReset),
    ENTRY("cuDevicePrimaryCtxReset", 11000, cuDevicePrimaryCtxReset_v2),
    ENTRY("cuDevicePrimaryCtxGetState", 7000, cuDevicePrimaryCtxGetState),
    ENTRY("cuDevicePrimaryCtxSetFlags", 7000, cuDevicePrimaryCtxSetFlags),
    ENTRY("cuDevicePrimaryCtxSetFlags", 11000, cuDevicePrimaryCtxSetFlags_v2),

    // Contexts.
    ENTRY("cuCtxCreate", 2000, cuCtxCreate),
    ENTRY("cuCtxCreate", 3020, cuCtxCreate_v2),
    ENTRY("cuCtxCreate", 11040, cuCtxCreate_v3),
    ENTRY("cuCtxCreate", 12050, cuCtxCreate_v4),
    ENTRY("cuCtxDestroy", 2000, cuCtxDestroy),
    ENTRY("cuCtxDestroy", 4000, cuCtxDestroy_v2),
    ENTRY("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    ENTRY("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    ENTRY("cuCtxPushCurrent", 2000, cuCtxPushCurrent),
    ENTRY("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2),
    ENTRY("cuCtxPopCurrent", 2000, cuCtxPopCurrent),
    ENTRY("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2),
    ENTRY("cuCtxGetDevice", 2000, cuCtxGetDevice),
    ENTRY("cuCtxGetDevice", 13000, cuCtxGetDevice_v2),
    ENTRY("cuCtxSynchronize", 2000, cuCtxSynchronize),
    ENTRY("cuCtxSynchronize", 13000, cuCtxSynchronize_v2),

    // Streams.
    ENTRY("cuStreamCreate", 2000, cuStreamCreate),
    ENTRY("cuStreamDestroy", 2000, cuStreamDestroy),
    ENTRY("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    ENTRY_PT("cuStreamSynchronize", 2000, cuStreamSynchronize, cuStreamSynchronize_ptsz),

    // Linear device memory.
    ENTRY("cuMemGetInfo", 2000, cuMemGetInfo),
    ENTRY("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    ENTRY("cuMemAlloc", 2000, cuMemAlloc),
    ENTRY("cuMemAlloc", 3020, cuMemAlloc_v2),
    ENTRY("cuMemAllocPitch", 2000, cuMemAllocPitch),
    ENTRY("cuMemAllocPitch", 3020, cuMemAllocPitch_v2),
    ENTRY("cuMemFree", 2000, cuMemFree),
    ENTRY("cuMemFree", 3020, cuMemFree_v2),
    ENTRY("cuMemGetAddressRange", 2000, cuMemGetAddressRange),
    ENTRY("cuMemGetAddressRange", 3020, cuMemGetAddressRange_v2),
    ENTRY("cuMemAllocManaged", 6000, cuMemAllocManaged),
    ENTRY("cuPointerGetAttribute", 4000, cuPointerGetAttribute),

    // Host memory.
    ENTRY("cuMemAllocHost", 2000, cuMemAllocHost),
    ENTRY("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    ENTRY("cuMemHostAlloc", 2020, cuMemHostAlloc),
    ENTRY("cuMemFreeHost", 2000, cuMemFreeHost),
    ENTRY("cuMemHostGetDevicePointer", 2020, cuMemHostGetDevicePointer),
    ENTRY("cuMemHostGetDevicePointer", 3020, cuMemHostGetDevicePointer_v2),
    ENTRY("cuMemHostGetFlags", 2030, cuMemHostGetFlags),
    ENTRY("cuMemHostRegister", 4000, cuMemHostRegister),
    ENTRY("cuMemHostRegister", 6050, cuMemHostRegister_v2),
    ENTRY("cuMemHostUnregister", 4000, cuMemHostUnregister),

    // Copies and sets.
    ENTRY("cuMemcpyHtoD", 2000, cuMemcpyHtoD),
    ENTRY_PT("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds),
    ENTRY("cuMemcpyDtoH", 2000, cuMemcpyDtoH),
    ENTRY_PT("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds),
    ENTRY("cuMemcpyDtoD", 2000, cuMemcpyDtoD),
    ENTRY_PT("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds),
    ENTRY("cuMemsetD8", 2000, cuMemsetD8),
    ENTRY_PT("cuMemsetD8", 3020, cuMemsetD8_v2, cuMemsetD8_v2_ptds),

    // Stream-ordered allocation and pools.
    ENTRY_PT("cuMemAllocAsync", 11020, cuMemAllocAsync, cuMemAllocAsync_ptsz),
    ENTRY_PT("cuMemFreeAsync", 11020, cuMemFreeAsync, cuMemFreeAsync_ptsz),
    ENTRY_PT("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync,
             cuMemAllocFromPoolAsync_ptsz),
    ENTRY("cuMemPoolCreate", 11020, cuMemPoolCreate),
    ENTRY("cuMemPoolDestroy", 11020, cuMemPoolDestroy),
    ENTRY("cuMemPoolTrimTo", 11020, cuMemPoolTrimTo),
    ENTRY("cuMemPoolGetAttribute", 11020, cuMemPoolGetAttribute),
    ENTRY("cuMemPoolSetAttribute", 11020, cuMemPoolSetAttribute),
    ENTRY("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool),
    ENTRY("cuDeviceGetMemPool", 11020, cuDeviceGetMemPool),
    ENTRY("cuDeviceSetMemPool", 11020, cuDeviceSetMemPool),
    ENTRY("cuMemGetDefaultMemPool", 13000, cuMemGetDefaultMemPool),
    ENTRY("cuMemGetMemPool", 13000, cuMemGetMemPool),
    ENTRY("cuMemSetMemPool", 13000, cuMemSetMemPool),

    // Virtual memory management.
    ENTRY("cuMemGetAllocationGranularity", 10020, cuMemGetAllocationGranularity),
    ENTRY("cuMemCreate", 10020, cuMemCreate),
    ENTRY("cuMemRelease", 10020, cuMemRelease),
    ENTRY("cuMemAddressReserve", 10020, cuMemAddressReserve),
    ENTRY("cuMemAddressFree", 10020, cuMemAddressFree),
    ENTRY("cuMemMap", 10020, cuMemMap),
    ENTRY("cuMemUnmap", 10020, cuMemUnmap),
    ENTRY("cuMemSetAccess", 10020, cuMemSetAccess),
    ENTRY("cuMemGetAllocationPropertiesFromHandle", 10020, cuMemGetAllocationPropertiesFromHandle),
    ENTRY("cuMemRetainAllocationHandle", 11000, cuMemRetainAllocationHandle),

    // Arrays.
    ENTRY("cuArrayCreate", 2000, cuArrayCreate),
    ENTRY("cuArrayCreate", 3020, cuArrayCreate_v2),
    ENTRY("cuArray3DCreate", 2000, cuArray3DCreate),
    ENTRY("cuArray3DCreate", 3020, cuArray3DCreate_v2),
    ENTRY("cuArrayDestroy", 2000, cuArrayDestroy),
    ENTRY("cuMipmappedArrayCreate", 5000, cuMipmappedArrayCreate),
    ENTRY("cuMipmappedArrayDestroy", 5000, cuMipmappedArrayDestroy),

    // Graphs. From 12.0 on, "cuGraphInstantiate" is the flags ABI (cuda.h maps the name to
    // cuGraphInstantiateWithFlags).
    ENTRY("cuGraphCreate", 10000, cuGraphCreate),
    ENTRY("cuGraphDestroy", 10000, cuGraphDestroy),
    ENTRY("cuGraphAddMemAllocNode", 11040, cuGraphAddMemAllocNode),
    ENTRY("cuGraphAddMemFreeNode", 11040, cuGraphAddMemFreeNode),
    ENTRY("cuGraphMemAllocNodeGetParams", 11040, cuGraphMemAllocNodeGetParams),
    ENTRY("cuGraphMemFreeNodeGetParams", 11040, cuGraphMemFreeNodeGetParams),
    ENTRY("cuGraphInstantiate", 10000, cuGraphInstantiate),
    ENTRY("cuGraphInstantiate", 11000, cuGraphInstantiate_v2),
    ENTRY("cuGraphInstantiate", 12000, cuGraphInstantiateWithFlags),
    ENTRY("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags),
    ENTRY_PT("cuGraphInstantiateWithParams", 12000, cuGraphInstantiateWithParams,
             cuGraphInstantiateWithParams_ptsz),
    ENTRY("cuGraphExecDestroy", 10000, cuGraphExecDestroy),
    ENTRY_PT("cuGraphLaunch", 10000, cuGraphLaunch, cuGraphLaunch_ptsz),
    ENTRY("cuDeviceGetGraphMemAttribute", 11040, cuDeviceGetGraphMemAttribute),
    ENTRY("cuDeviceSetGraphMemAttribute", 11040, cuDeviceSetGraphMemAttribute),
    ENTRY("cuDeviceGraphMemTrim", 11040, cuDeviceGraphMemTrim),

    // IPC.
    ENTRY("cuIpcGetMemHandle", 4010, cuIpcGetMemHandle),
    ENTRY("cuIpcOpenMemHandle", 4010, cuIpcOpenMemHandle),
    ENTRY("cuIpcOpenMemHandle", 11000, cuIpcOpenMemHandle_v2),
    ENTRY("cuIpcCloseMemHandle", 4010, cuIpcCloseMemHandle),
};

#undef ENTRY
#undef ENTRY_PT

}  // namespace

std::span<const ProcAddressEntry> procaddress_table() {
  return kTable;
}

}  // namespace fakecuda
