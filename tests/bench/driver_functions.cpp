// SPDX-License-Identifier: Apache-2.0
#include "tests/bench/driver_functions.h"

#include <dlfcn.h>

#include <stdexcept>

namespace gmt::bench {
namespace {

template <class Fn>
Fn lookup(void* library, const char* name, const std::string& where) {
  void* symbol = dlsym(library, name);
  if (symbol == nullptr) throw std::runtime_error(where + " has no " + name);
  return reinterpret_cast<Fn>(symbol);
}

AllocFree functions_of(void* library, const std::string& where) {
  AllocFree fns;
  fns.alloc = lookup<decltype(fns.alloc)>(library, "cuMemAlloc_v2", where);
  fns.free = lookup<decltype(fns.free)>(library, "cuMemFree_v2", where);
  return fns;
}

// The driver's cuMemAlloc_v2, for the allocation that follows the queries.
CUresult (*g_driver_alloc)(CUdeviceptr*, std::size_t) = nullptr;

CUresult alloc_after_context_queries(CUdeviceptr* dptr, std::size_t bytes) {
  CUcontext ctx = nullptr;
  CUdevice device = -1;
  if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || cuCtxGetDevice(&device) != CUDA_SUCCESS) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  return g_driver_alloc(dptr, bytes);
}

}  // namespace

// Looked up the way the wrappers find them (a NOLOAD open of the already loaded driver), so
// that both sides make the same indirect call into the driver.
AllocFree driver_functions() {
  void* libcuda = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_NOW);
  if (libcuda == nullptr) throw std::runtime_error(std::string("libcuda.so.1: ") + dlerror());
  return functions_of(libcuda, "libcuda.so.1");
}

AllocFree driver_functions_with_context_queries() {
  AllocFree fns = driver_functions();
  g_driver_alloc = fns.alloc;
  fns.alloc = alloc_after_context_queries;
  return fns;
}

// RTLD_LOCAL: the library's exported dlsym and cu* wrappers must not take over this process's
// symbol lookups, or the untraced side would be traced too. Its wrappers find the real driver
// the same way as when it is preloaded.
AllocFree traced_functions(const std::string& path) {
  void* preload = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (preload == nullptr) throw std::runtime_error(path + ": " + dlerror());
  return functions_of(preload, path);
}

}  // namespace gmt::bench
