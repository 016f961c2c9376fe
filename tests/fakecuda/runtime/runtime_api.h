// SPDX-License-Identifier: Apache-2.0
// The CUDA runtime API as the fake libcudart implements it.
//
// The runtime header is wrapped in "visibility push(default)" so the declared cuda* API is
// public while the rest of the library stays hidden (-fvisibility=hidden). cuda.h and
// cudaTypedefs.h only provide the driver types and PFN_* typedefs: the runtime never calls a
// driver symbol directly, only pointers obtained through cuGetProcAddress.
#pragma once

#pragma GCC visibility push(default)
#include <cuda_runtime_api.h>

// Per-thread-default-stream variants the real libcudart exports next to the legacy ones
// (what the header's macros select under --default-stream per-thread).
extern "C" {
cudaError_t CUDARTAPI cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t hStream);
cudaError_t CUDARTAPI cudaFreeAsync_ptsz(void* devPtr, cudaStream_t hStream);
cudaError_t CUDARTAPI cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, cudaMemPool_t memPool,
                                                   cudaStream_t stream);
cudaError_t CUDARTAPI cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t CUDARTAPI cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);
cudaError_t CUDARTAPI cudaMemcpy_ptds(void* dst, const void* src, size_t count,
                                      enum cudaMemcpyKind kind);
cudaError_t CUDARTAPI cudaMemset_ptds(void* devPtr, int value, size_t count);
cudaError_t CUDARTAPI
cudaGetDriverEntryPoint_ptsz(const char* symbol, void** funcPtr, unsigned long long flags,
                             enum cudaDriverEntryPointQueryResult* driverStatus);
cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion_ptsz(
    const char* symbol, void** funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult* driverStatus);
}
#pragma GCC visibility pop

#include <cuda.h>
#include <cudaTypedefs.h>
