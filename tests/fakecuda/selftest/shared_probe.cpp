// SPDX-License-Identifier: Apache-2.0
// A program linked with the shared fake runtime only; run by probes_test.cpp under the probe
// preload. Exit status 0 when every call succeeded. With --expect-no-driver it checks instead
// that a runtime which cannot load libcuda.so.1 reports cudaErrorInsufficientDriver.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "shared probe: %s failed\n", what);
    ++failures;
  }
}

// Pre-3.2 ABIs, looked up by version; their implementations must not call the exported _v2
// symbols (the preload traps those).
using LegacyMemGetInfo = CUresult (*)(unsigned int*, unsigned int*);
using LegacyMemAlloc = CUresult (*)(unsigned int*, unsigned int);

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--expect-no-driver") == 0) {
    void* p = nullptr;
    cudaError_t error = cudaMalloc(&p, 1);
    int count = -1;
    cudaError_t count_error = cudaGetDeviceCount(&count);
    std::printf("%s %s %d\n", cudaGetErrorName(error), cudaGetErrorName(count_error), count);
    return error == cudaErrorInsufficientDriver && count_error == cudaErrorInsufficientDriver &&
                   count == 0
               ? 0
               : 1;
  }
  void* p = nullptr;
  check(cudaMalloc(&p, 1 << 20) == cudaSuccess, "cudaMalloc");
  size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total) == cudaSuccess, "cudaMemGetInfo");
  check(cudaFree(p) == cudaSuccess, "cudaFree");
  void* q = nullptr;
  check(cudaMallocAsync(&q, 4096, nullptr) == cudaSuccess, "cudaMallocAsync");
  check(cudaFreeAsync(q, nullptr) == cudaSuccess, "cudaFreeAsync");

  void* function = nullptr;
  cudaDriverEntryPointQueryResult status;
  check(cudaGetDriverEntryPointByVersion("cuMemGetInfo", &function, 2000, cudaEnableDefault,
                                         &status) == cudaSuccess &&
            function != nullptr,
        "entry point cuMemGetInfo@2000");
  unsigned legacy_free = 0, legacy_total = 0;
  check(reinterpret_cast<LegacyMemGetInfo>(function)(&legacy_free, &legacy_total) == CUDA_SUCCESS,
        "legacy cuMemGetInfo");
  check(cudaGetDriverEntryPointByVersion("cuMemAlloc", &function, 2000, cudaEnableDefault,
                                         &status) == cudaSuccess &&
            function != nullptr,
        "entry point cuMemAlloc@2000");
  unsigned legacy_pointer = 0;
  check(reinterpret_cast<LegacyMemAlloc>(function)(&legacy_pointer, 4096) == CUDA_SUCCESS,
        "legacy cuMemAlloc");
  if (failures == 0) std::printf("shared probe OK\n");
  return failures == 0 ? 0 : 1;
}
