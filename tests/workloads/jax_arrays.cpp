// SPDX-License-Identifier: Apache-2.0
// A JAX program as a trace sees it, through the plugin that plays XLA's allocator
// (xla_pool_plugin.cpp): one array kept (64 MiB, at `keep_line`), then 16 temporary arrays of
// 16 MiB, each freed. Prints the allocator setting it ran with. Usage: workload_jax_arrays
// PATH_TO_PLUGIN
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace {

using Allocate = CUdeviceptr (*)(size_t);
using Free = void (*)(CUdeviceptr);
Allocate xla_allocate = nullptr;
Free xla_free = nullptr;

constexpr size_t kMiB = 1 << 20;

__attribute__((noinline)) CUdeviceptr keep() {
  std::printf("keep_line=%d\n", __LINE__ + 1);
  const CUdeviceptr kept = xla_allocate(64 * kMiB);
  asm volatile("" ::: "memory");  // not a tail call: keep() stays on the stack
  return kept;
}

__attribute__((noinline)) void temporaries() {
  for (int i = 0; i < 16; ++i) xla_free(xla_allocate(16 * kMiB));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 1;
  void* plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (plugin == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  xla_allocate = reinterpret_cast<Allocate>(dlsym(plugin, "xla_allocate"));
  xla_free = reinterpret_cast<Free>(dlsym(plugin, "xla_free"));
  if (xla_allocate == nullptr || xla_free == nullptr) return 2;
  const char* allocator = std::getenv("XLA_PYTHON_CLIENT_ALLOCATOR");
  std::printf("XLA_PYTHON_CLIENT_ALLOCATOR=%s\n", allocator != nullptr ? allocator : "(unset)");
  if (keep() == 0) return 3;
  temporaries();
  return 0;
}
