// Our replacement for each driver entry point in GMT_DRIVER_ENTRY_POINTS, with the ABI of the
// function it stands in for. Hidden: programs reach them through exported aliases with the
// driver's names, or through what dlsym and cuGetProcAddress hand out.
#pragma once

#include "interpose/hooks/cuda_api.h"

#define GMT_HIDDEN __attribute__((visibility("hidden")))

extern "C" {
GMT_HIDDEN CUresult gmt_cuGetProcAddress(const char* symbol, void** pfn, int cuda_version,
                                         cuuint64_t flags);
GMT_HIDDEN CUresult gmt_cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version,
                                            cuuint64_t flags,
                                            CUdriverProcAddressQueryResult* status);
GMT_HIDDEN CUresult gmt_cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize);
GMT_HIDDEN CUresult gmt_cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize);
GMT_HIDDEN CUresult gmt_cuMemFree(CUdeviceptr_v1 dptr);
GMT_HIDDEN CUresult gmt_cuMemFree_v2(CUdeviceptr dptr);
}
