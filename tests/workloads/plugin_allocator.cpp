// SPDX-License-Identifier: Apache-2.0
// A plugin that allocates device memory, loaded and unloaded at run time by dlopen_plugin.cpp:
// allocations made by a library that is gone by the time of the report must still be named.
#include <cuda_runtime_api.h>

#include <cstdio>

extern "C" __attribute__((visibility("default"), noinline)) void* plugin_allocate(size_t bytes) {
  void* p = nullptr;
  std::printf("plugin_line=%d\n", __LINE__ + 1);
  return cudaMalloc(&p, bytes) == cudaSuccess ? p : nullptr;
}
