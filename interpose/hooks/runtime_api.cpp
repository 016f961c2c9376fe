// The CUDA runtime's allocation APIs, exported so that a program calling cudaMalloc through a
// shared libcudart binds to us first. They record nothing themselves: they note which public API
// the program called (PublicApiScope) and forward to the real runtime function, whose driver
// call is then recorded once, under both names. A static cudart is linked into the program and
// cannot be interposed; its allocations keep their driver names only.
//
// Where to forward is the hard part: a process may hold several runtimes (PyTorch's bundled
// libcudart.so.13 beside a plugin built against libcudart.so.12). Every real runtime versions
// its symbols (cudaMalloc@libcudart.so.12), so each caller's reference names its runtime. We
// export each function under each known version node too (runtime_exports.map): a reference
// binds to the wrapper of its own version, which forwards to the loaded runtime of that SONAME.
// This survives tail calls and plugins loaded with RTLD_LOCAL. An unversioned reference (or a
// version we do not know) binds to the plain name, which has only the return address to go by:
// it forwards to what the calling object would have reached through its own dependencies, then
// the global scope.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "interpose/export.h"
#include "interpose/hooks/real_dlsym.h"
#include "interpose/record/public_api_scope.h"

using gmt::format::Api;
using gmt::interpose::PublicApiScope;
using gmt::interpose::real_dlsym;

// Each wrapped function: its name, the API it is recorded as, its parameters and their names.
// The _ptsz flavours (per-thread default stream) are the same public API.
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

// cuda_runtime_api.h declares the _ptsz names only for code built for the per-thread stream.
extern "C" {
cudaError_t cudaMallocAsync_ptsz(void** p, size_t n, cudaStream_t s);
cudaError_t cudaFreeAsync_ptsz(void* p, cudaStream_t s);
cudaError_t cudaMallocFromPoolAsync_ptsz(void** p, size_t n, cudaMemPool_t pool, cudaStream_t s);
}

namespace {

#define GMT_RUNTIME_INDEX(name, api, params, args) k_##name,
enum RuntimeFunction : uint8_t { GMT_RUNTIME_FUNCTIONS(GMT_RUNTIME_INDEX) kRuntimeFunctionCount };
#undef GMT_RUNTIME_INDEX

#define GMT_RUNTIME_NAME(name, api, params, args) #name,
constexpr const char* kRuntimeNames[] = {GMT_RUNTIME_FUNCTIONS(GMT_RUNTIME_NAME)};
#undef GMT_RUNTIME_NAME

// Our own plain-name wrappers, through hidden aliases: &::cudaMalloc would go through the GOT,
// which names whichever definition comes first in the process.
#define GMT_RUNTIME_SELF_DECLARATION(name, api, params, args) \
  extern "C" __attribute__((visibility("hidden"))) void gmt_self_##name();
GMT_RUNTIME_FUNCTIONS(GMT_RUNTIME_SELF_DECLARATION)
#undef GMT_RUNTIME_SELF_DECLARATION
#define GMT_RUNTIME_SELF(name, api, params, args) reinterpret_cast<void*>(&gmt_self_##name),
void* const kRuntimeSelf[] = {GMT_RUNTIME_FUNCTIONS(GMT_RUNTIME_SELF)};
#undef GMT_RUNTIME_SELF

// The definition `caller` would have reached without us: from its own object and dependencies
// (how it was linked), else from the global scope after us; nullptr when there is none.
void* definition_seen_from(const void* caller, RuntimeFunction fn) {
  const auto dlsym_fn = real_dlsym();
  if (dlsym_fn == nullptr) return nullptr;
  const char* name = kRuntimeNames[fn];
  void* target = nullptr;
  Dl_info info;
  link_map* object = nullptr;
  if (caller != nullptr &&
      dladdr1(caller, &info, reinterpret_cast<void**>(&object), RTLD_DL_LINKMAP) != 0 &&
      object != nullptr) {
    // In glibc a link_map is a dlopen handle: this searches the object's own dependency list.
    // For the program itself that list is the global scope, which starts with us.
    target = dlsym_fn(object, name);
  }
  if (target == nullptr || target == kRuntimeSelf[fn]) target = dlsym_fn(RTLD_NEXT, name);
  return target == kRuntimeSelf[fn] ? nullptr : target;
}

// Call site -> target, filled on first use and never evicted: a program has few call sites of
// these functions. A full table only costs the lookup again.
class TargetCache {
 public:
  void* find(const void* caller, RuntimeFunction fn) {
    const uint64_t key = key_of(caller, fn);
    for (std::size_t i = 0, slot = hash(key); i < kProbes; ++i, slot = (slot + 1) % kSlots) {
      const uint64_t seen = slots_[slot].key.load(std::memory_order_acquire);
      if (seen == key) {
        void* target = slots_[slot].target.load(std::memory_order_acquire);
        return target != nullptr ? target : definition_seen_from(caller, fn);
      }
      if (seen != 0) continue;
      uint64_t expected = 0;
      if (slots_[slot].key.compare_exchange_strong(expected, key, std::memory_order_acq_rel) ||
          expected == key) {
        void* target = definition_seen_from(caller, fn);
        // A runtime can be loaded later (dlopen): only a found target is worth keeping.
        if (target != nullptr) slots_[slot].target.store(target, std::memory_order_release);
        return target;
      }
    }
    return definition_seen_from(caller, fn);
  }

 private:
  static constexpr std::size_t kSlots = 1024;
  static constexpr std::size_t kProbes = 16;
  struct Slot {
    std::atomic<uint64_t> key{0};
    std::atomic<void*> target{nullptr};
  };
  // User-space addresses fit in 48 bits; the function goes above them.
  static uint64_t key_of(const void* caller, RuntimeFunction fn) {
    return reinterpret_cast<uintptr_t>(caller) | (uint64_t{fn} + 1) << 56;
  }
  static std::size_t hash(uint64_t key) { return (key * 0x9E3779B97F4A7C15ull) >> 54; }

  Slot slots_[kSlots];
};

// Zero-initialized static storage: usable from the first call, whatever the constructor order.
TargetCache g_targets;

// The runtime versions we export under: the version node each real libcudart defines, which is
// also its SONAME.
#define GMT_RUNTIME_VERSIONS(X) \
  X(v11, "libcudart.so.11.0")   \
  X(v12, "libcudart.so.12")     \
  X(v13, "libcudart.so.13")

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
R forward(RuntimeFunction fn, Api api, const void* caller, A... args) {
  return call_within<R>(api, g_targets.find(caller, fn), args...);
}

template <class R, class... A>
R forward_versioned(RuntimeFunction fn, RuntimeVersion version, Api api, A... args) {
  return call_within<R>(api, versioned_target(fn, version), args...);
}

}  // namespace

// The return address is taken here, in the exported function's own frame: inside an inlined
// helper it would not name the caller.
#define GMT_CALL_ARGS(...) __VA_OPT__(, ) __VA_ARGS__
#define GMT_RUNTIME_WRAPPER(name, api, params, args)                             \
  extern "C" GMT_EXPORT cudaError_t name params {                                \
    return forward<cudaError_t>(k_##name, Api::api,                              \
                                __builtin_return_address(0) GMT_CALL_ARGS args); \
  }                                                                              \
  __asm__(".set gmt_self_" #name ", " #name);
GMT_RUNTIME_FUNCTIONS(GMT_RUNTIME_WRAPPER)
#undef GMT_RUNTIME_WRAPPER

// name@node for every known runtime version. The gmt_ names themselves are kept out of the
// dynamic symbol table by runtime_exports.map.
#define GMT_VERSIONED_WRAPPER(name, api, params, args, tag, node)                          \
  extern "C" GMT_EXPORT cudaError_t gmt_##name##_##tag params {                            \
    return forward_versioned<cudaError_t>(k_##name, k_##tag, Api::api GMT_CALL_ARGS args); \
  }                                                                                        \
  __asm__(".symver gmt_" #name "_" #tag ", " #name "@" node);
#define GMT_VERSIONED_WRAPPERS(name, api, params, args)                    \
  GMT_VERSIONED_WRAPPER(name, api, params, args, v11, "libcudart.so.11.0") \
  GMT_VERSIONED_WRAPPER(name, api, params, args, v12, "libcudart.so.12")   \
  GMT_VERSIONED_WRAPPER(name, api, params, args, v13, "libcudart.so.13")
GMT_RUNTIME_FUNCTIONS(GMT_VERSIONED_WRAPPERS)
#undef GMT_VERSIONED_WRAPPERS
#undef GMT_VERSIONED_WRAPPER
#undef GMT_CALL_ARGS

// For the dlsym hook: whether a lookup of `name` from `caller` must say "not found", because it
// would find our export where, without us, there is no such function (no runtime loaded). Any
// other lookup may get our export: it forwards to what the lookup would have found.
extern "C" __attribute__((visibility("hidden"))) bool gmt_runtime_export_unbacked(
    const char* name, const void* caller) {
  for (uint8_t fn = 0; fn < kRuntimeFunctionCount; ++fn) {
    if (std::strcmp(name, kRuntimeNames[fn]) == 0) {
      return definition_seen_from(caller, static_cast<RuntimeFunction>(fn)) == nullptr;
    }
  }
  return false;
}

// The same for a lookup with a real handle that returned `symbol`.
extern "C" __attribute__((visibility("hidden"))) bool gmt_runtime_export_symbol_unbacked(
    const void* symbol, const void* caller) {
  for (uint8_t fn = 0; fn < kRuntimeFunctionCount; ++fn) {
    if (symbol == kRuntimeSelf[fn]) {
      return definition_seen_from(caller, static_cast<RuntimeFunction>(fn)) == nullptr;
    }
  }
  return false;
}
