// SPDX-License-Identifier: Apache-2.0
// XLA's allocator as JAX's GPU plugin (xla_cuda_plugin.so) runs it, reduced to what a trace
// sees. By default (BFC) the first array takes XLA_PYTHON_CLIENT_MEM_FRACTION (0.75) of the
// device in one allocation, or with XLA_PYTHON_CLIENT_PREALLOCATE=false grows regions, and every
// array is handed out inside them unseen; with XLA_PYTHON_CLIENT_ALLOCATOR=platform each array
// is its own cuMemAlloc and cuMemFree. The driver is reached through dlsym, as XLA's CUDA stub
// does. Built as jax_plugins/xla_cuda13/xla_cuda_plugin.so, named as the real one is.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

struct Driver {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*set_current)(CUcontext) = nullptr;
  CUresult (*mem_get_info)(size_t*, size_t*) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
};

template <class F>
void find(void* cuda, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(cuda, name));
  if (*out == nullptr) {
    std::fprintf(stderr, "xla_pool_plugin: no %s\n", name);
    std::exit(2);
  }
}

Driver& driver() {
  static Driver d = [] {
    Driver t;
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (cuda == nullptr) {
      std::fprintf(stderr, "xla_pool_plugin: %s\n", dlerror());
      std::exit(2);
    }
    find(cuda, "cuInit", &t.init);
    find(cuda, "cuDevicePrimaryCtxRetain", &t.retain);
    find(cuda, "cuCtxSetCurrent", &t.set_current);
    find(cuda, "cuMemGetInfo_v2", &t.mem_get_info);
    find(cuda, "cuMemAlloc_v2", &t.mem_alloc);
    find(cuda, "cuMemFree_v2", &t.mem_free);
    CUcontext ctx = nullptr;
    if (t.init(0) != CUDA_SUCCESS || t.retain(&ctx, 0) != CUDA_SUCCESS ||
        t.set_current(ctx) != CUDA_SUCCESS) {
      std::fprintf(stderr, "xla_pool_plugin: no context\n");
      std::exit(2);
    }
    return t;
  }();
  return d;
}

std::string setting(const char* name, const char* otherwise) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : otherwise;
}

// BFC's regions, reduced to one bump pointer: freed arrays stay in the pool.
struct Pool {
  CUdeviceptr next = 0;
  size_t left = 0;
  size_t last_region = 0;
};

CUdeviceptr new_region(size_t bytes) {
  CUdeviceptr region = 0;
  if (driver().mem_alloc(&region, bytes) != CUDA_SUCCESS) {
    std::fprintf(stderr, "xla_pool_plugin: cannot allocate a region of %zu bytes\n", bytes);
    std::exit(3);
  }
  return region;
}

CUdeviceptr from_pool(size_t bytes) {
  static Pool pool;
  if (pool.left < bytes) {
    size_t region = 0;
    if (setting("XLA_PYTHON_CLIENT_PREALLOCATE", "true") != "false" && pool.last_region == 0) {
      size_t free = 0, total = 0;
      driver().mem_get_info(&free, &total);
      region = static_cast<size_t>(
          std::strtod(setting("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.75").c_str(), nullptr) *
          static_cast<double>(total));
    } else {
      region = pool.last_region == 0 ? bytes : 2 * pool.last_region;  // BFC doubles its regions
      if (region < bytes) region = bytes;
    }
    pool.next = new_region(region);
    pool.left = region;
    pool.last_region = region;
  }
  const CUdeviceptr p = pool.next;
  pool.next += bytes;
  pool.left -= bytes;
  return p;
}

bool platform() {
  return setting("XLA_PYTHON_CLIENT_ALLOCATOR", "default") == "platform";
}

}  // namespace

extern "C" __attribute__((visibility("default"), noinline)) CUdeviceptr xla_allocate(size_t bytes) {
  if (!platform()) return from_pool(bytes);
  CUdeviceptr p = 0;
  return driver().mem_alloc(&p, bytes) == CUDA_SUCCESS ? p : 0;
}

extern "C" __attribute__((visibility("default"), noinline)) void xla_free(CUdeviceptr p) {
  if (platform()) driver().mem_free(p);
}
