// SPDX-License-Identifier: Apache-2.0
// A library built against the other runtime (libcudart.so.12), as a plugin built for an older
// toolkit is, loaded beside a program that uses libcudart.so.13. Its calls must reach its own
// runtime, which keeps its own last error per thread.
#include <cuda_runtime_api.h>

#include <cstddef>

#define GMT_PLUGIN_API extern "C" __attribute__((visibility("default")))

GMT_PLUGIN_API int runtime12_allocate(std::size_t bytes, void** out) {
  return static_cast<int>(cudaMalloc(out, bytes));
}

GMT_PLUGIN_API int runtime12_free(void* p) {
  return static_cast<int>(cudaFree(p));
}

GMT_PLUGIN_API int runtime12_last_error() {
  return static_cast<int>(cudaGetLastError());
}
