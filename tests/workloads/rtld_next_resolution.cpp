// SPDX-License-Identifier: Apache-2.0
// Runs rtld_next_probe's lookups before CUDA is touched and again after a context and an
// allocation, when the preload library is fully at work; the test compares the output with
// that of a run without the preload.
#include <cuda.h>

#include <cstdio>

extern "C" void rtld_next_probe(const char* label);

int main() {
  rtld_next_probe("before");
  CUcontext ctx = nullptr;
  CUdeviceptr p = 0;
  if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS || cuMemAlloc(&p, 1 << 20) != CUDA_SUCCESS ||
      cuMemFree(p) != CUDA_SUCCESS) {
    std::fprintf(stderr, "rtld_next_resolution: CUDA calls failed\n");
    return 3;
  }
  rtld_next_probe("after");
  return 0;
}
