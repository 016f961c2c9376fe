// SPDX-License-Identifier: Apache-2.0
// The CUDA runtime's allocation APIs, exported so that a program calling cudaMalloc through a
// shared libcudart binds to us first. They record nothing themselves: they note which public API
// the program called (PublicApiScope) and forward to the real runtime function, whose driver
// call is then recorded once, under both names. A static cudart is linked into the program and
// cannot be interposed; its allocations keep their driver names only.
//
// Where to forward is the hard part: a process may hold several runtimes (PyTorch's bundled
// libcudart.so.13 beside a plugin built against libcudart.so.12). Every real runtime versions
// its symbols, so each caller's reference names its runtime (cudaMalloc@libcudart.so.12). We
// export each function only under each known runtime's version node (runtime_exports.map), as
// non-default versions: a reference binds to the wrapper of its own version, which forwards to
// the loaded runtime with that SONAME; tail calls and plugins loaded with RTLD_LOCAL change
// nothing. There is deliberately no plain `cudaMalloc`: the loader lets a versioned reference
// bind to an unversioned definition, which could then not know the caller's runtime, and a
// lookup without a version (dlsym(RTLD_DEFAULT, "cudaMalloc")) skips non-default versions, so
// our exports never make a missing runtime look present.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdint>

#include "interpose/common/real_dlsym.h"
#include "interpose/export.h"
#include "interpose/record/public_api_scope.h"

using gmt::format::Api;
using gmt::interpose::PublicApiScope;
using gmt::interpose::real_dlsym;

// Each wrapped function: its name, the API it is recorded as, its parameters and their names.
// The _ptsz flavours (per-thread default stream) are the same public API. The parameter lists
// are checked against no declaration (the wrappers have gmt_ names): they must be the
// runtime's exactly.
#define GMT_RUNTIME_FUNCTIONS(X)                                                                  \
  X(cudaMalloc, kCudaMalloc, (void** p, size_t n), (p, n))                                        \
  X(cudaFree, kCudaFree, (void* p), (p))                                                          \
  X(cudaMallocPitch, kCudaMallocPitch, (void** p, size_t* pitch, size_t w, size_t h),             \
    (p, pitch, w, h))                                                                             \
  X(cudaMalloc3D, kCudaMalloc3D, (cudaPitchedPtr * p, cudaExtent e), (p, e))                      \
  X(cudaMallocManaged, kCudaMallocManaged, (void** p, size_t n, unsigned int flags),              \
    (p, n, flags))                                                                                \
  X(cudaMallocHost, kCudaMallocHost, (void** p, size_t n), (p, n))                                \
  X(cudaHostAlloc, kCudaHostAlloc, (void** p, size_t n, unsigned int flags), (p, n, flags))       \
  X(cudaFreeHost, kCudaFreeHost, (void* p), (p))                                                  \
  X(cudaHostRegister, kCudaHostRegister, (void* p, size_t n, unsigned int flags), (p, n, flags))  \
  X(cudaHostUnregister, kCudaHostUnregister, (void* p), (p))                                      \
  X(cudaMallocAsync, kCudaMallocAsync, (void** p, size_t n, cudaStream_t s), (p, n, s))           \
  X(cudaMallocAsync_ptsz, kCudaMallocAsync, (void** p, size_t n, cudaStream_t s), (p, n, s))      \
  X(cudaFreeAsync, kCudaFreeAsync, (void* p, cudaStream_t s), (p, s))                             \
  X(cudaFreeAsync_ptsz, kCudaFreeAsync, (void* p, cudaStream_t s), (p, s))                        \
  X(cudaMallocFromPoolAsync, kCudaMallocFromPoolAsync,                                            \
    (void** p, size_t n, cudaMemPool_t pool, cudaStream_t s), (p, n, pool, s))                    \
  X(cudaMallocFromPoolAsync_ptsz, kCudaMallocFromPoolAsync,                                       \
    (void** p, size_t n, cudaMemPool_t pool, cudaStream_t s), (p, n, pool, s))                    \
  X(cudaMallocArray, kCudaMallocArray,                                                            \
    (cudaArray_t * a, const cudaChannelFormatDesc* d, size_t w, size_t h, unsigned int flags),    \
    (a, d, w, h, flags))                                                                          \
  X(cudaMalloc3DArray, kCudaMalloc3DArray,                                                        \
    (cudaArray_t * a, const cudaChannelFormatDesc* d, cudaExtent e, unsigned int flags),          \
    (a, d, e, flags))                                                                             \
  X(cudaMallocMipmappedArray, kCudaMallocMipmappedArray,                                          \
    (cudaMipmappedArray_t * a, const cudaChannelFormatDesc* d, cudaExtent e, unsigned int levels, \
     unsigned int flags),                                                                         \
    (a, d, e, levels, flags))                                                                     \
  X(cudaFreeArray, kCudaFreeArray, (cudaArray_t a), (a))                                          \
  X(cudaFreeMipmappedArray, kCudaFreeMipmappedArray, (cudaMipmappedArray_t a), (a))               \
  X(cudaMemPoolCreate, kCudaMemPoolCreate, (cudaMemPool_t * pool, const cudaMemPoolProps* props), \
    (pool, props))                                                                                \
  X(cudaMemPoolDestroy, kCudaMemPoolDestroy, (cudaMemPool_t pool), (pool))                        \
  X(cudaMemPoolTrimTo, kCudaMemPoolTrimTo, (cudaMemPool_t pool, size_t keep), (pool, keep))       \
  X(cudaIpcOpenMemHandle, kCudaIpcOpenMemHandle,                                                  \
    (void** p, cudaIpcMemHandle_t h, unsigned int flags), (p, h, flags))                          \
  X(cudaIpcCloseMemHandle, kCudaIpcCloseMemHandle, (void* p), (p))                                \
  X(cudaDeviceReset, kCudaDeviceReset, (), ())

namespace {

#define GMT_RUNTIME_INDEX(name, api, params, args) k_##name,
enum RuntimeFunction : uint8_t { GMT_RUNTIME_FUNCTIONS(GMT_RUNTIME_INDEX) kRuntimeFunctionCount };
#undef GMT_RUNTIME_INDEX

#define GMT_RUNTIME_NAME(name, api, params, args) #name,
constexpr const char* kRuntimeNames[] = {GMT_RUNTIME_FUNCTIONS(GMT_RUNTIME_NAME)};
#undef GMT_RUNTIME_NAME

// The runtime versions we export under: the version node each real libcudart defines, which is
// also its SONAME (runtime_exports.map declares the same nodes). X gets any leading arguments
// given after it, then the version's tag and node.
#define GMT_RUNTIME_VERSIONS(X, ...)                     \
  X(__VA_ARGS__ __VA_OPT__(, ) v11, "libcudart.so.11.0") \
  X(__VA_ARGS__ __VA_OPT__(, ) v12, "libcudart.so.12")   \
  X(__VA_ARGS__ __VA_OPT__(, ) v13, "libcudart.so.13")

#define GMT_VERSION_INDEX(tag, node) k_##tag,
enum RuntimeVersion : uint8_t { GMT_RUNTIME_VERSIONS(GMT_VERSION_INDEX) kRuntimeVersionCount };
#undef GMT_VERSION_INDEX

#define GMT_VERSION_NODE(tag, node) node,
constexpr const char* kVersionNodes[] = {GMT_RUNTIME_VERSIONS(GMT_VERSION_NODE)};
#undef GMT_VERSION_NODE

// The function `fn` of the loaded runtime whose version node is `version`, found once: a
// runtime stays loaded while anything that calls it does. nullptr while none is loaded.
std::atomic<void*> g_versioned[kRuntimeFunctionCount][kRuntimeVersionCount];

void* versioned_target(RuntimeFunction fn, RuntimeVersion version) {
  void* target = g_versioned[fn][version].load(std::memory_order_acquire);
  if (target != nullptr) return target;
  void* runtime = dlopen(kVersionNodes[version], RTLD_NOW | RTLD_NOLOAD);
  if (runtime == nullptr) return nullptr;
  target = dlvsym(runtime, kRuntimeNames[fn], kVersionNodes[version]);
  if (target == nullptr && real_dlsym() != nullptr)
    target = real_dlsym()(runtime, kRuntimeNames[fn]);
  dlclose(runtime);  // drops only the reference RTLD_NOLOAD took
  if (target != nullptr) g_versioned[fn][version].store(target, std::memory_order_release);
  return target;
}

template <class R, class... A>
R call_within(Api api, void* target, A... args) {
  // Only reachable by a program that found our export with no runtime loaded at all.
  if (target == nullptr) return cudaErrorInitializationError;
  PublicApiScope scope(api);
  return reinterpret_cast<R (*)(A...)>(target)(args...);
}

template <class R, class... A>
R forward_versioned(RuntimeFunction fn, RuntimeVersion version, Api api, A... args) {
  return call_within<R>(api, versioned_target(fn, version), args...);
}

}  // namespace

#define GMT_CALL_ARGS(...) __VA_OPT__(, ) __VA_ARGS__

// name@node for every known runtime version. The gmt_ names themselves are kept out of the
// dynamic symbol table by runtime_exports.map.
#define GMT_VERSIONED_WRAPPER(name, api, params, args, tag, node)                          \
  extern "C" GMT_EXPORT cudaError_t gmt_##name##_##tag params {                            \
    return forward_versioned<cudaError_t>(k_##name, k_##tag, Api::api GMT_CALL_ARGS args); \
  }                                                                                        \
  __asm__(".symver gmt_" #name "_" #tag ", " #name "@" node);
#define GMT_VERSIONED_WRAPPERS(name, api, params, args) \
  GMT_RUNTIME_VERSIONS(GMT_VERSIONED_WRAPPER, name, api, params, args)
GMT_RUNTIME_FUNCTIONS(GMT_VERSIONED_WRAPPERS)
#undef GMT_VERSIONED_WRAPPERS
#undef GMT_VERSIONED_WRAPPER
#undef GMT_CALL_ARGS
