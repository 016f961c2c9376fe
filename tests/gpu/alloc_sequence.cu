// The end-to-end tests' known sequence, built by nvcc for the real GPU: with the default static
// cudart (the path every nvcc program takes) or, with -DUSE_DRIVER, cuMemAlloc from -lcuda.
// alloc a 1 MiB, b 4, free a, c 2, d 8, free b, free d: peak 14 MiB, 2 MiB live at exit.
#include <cstdio>
#include <cstdlib>

#ifdef USE_DRIVER
#include <cuda.h>
typedef CUdeviceptr Ptr;
static int alloc(Ptr* p, size_t n) { return cuMemAlloc(p, n); }
static int release(Ptr p) { return cuMemFree(p); }
static void init() {
  CUcontext ctx;
  if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    std::fprintf(stderr, "driver init failed\n");
    std::exit(1);
  }
}
#else
#include <cuda_runtime.h>
typedef void* Ptr;
static int alloc(Ptr* p, size_t n) { return cudaMalloc(p, n); }
static int release(Ptr p) { return cudaFree(p); }
static void init() { cudaFree(0); }
#endif

int main() {
  const size_t MiB = 1 << 20;
  init();
  Ptr a, b, c, d;
  if (alloc(&a, 1 * MiB) || alloc(&b, 4 * MiB)) return 1;
  if (release(a)) return 1;
  if (alloc(&c, 2 * MiB) || alloc(&d, 8 * MiB)) return 1;
  if (release(b) || release(d)) return 1;
  std::printf("sequence done\n");
  return 0;
}
