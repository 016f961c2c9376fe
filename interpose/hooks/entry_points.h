// The driver entry points we wrap, each one ABI: `cuMemAlloc` (32-bit, CUDA 2.0) and
// `cuMemAlloc_v2` are different functions with different arguments, and the wrapper handed
// out must match the function the driver handed out, exactly.
#pragma once

#include <atomic>
#include <cstddef>

namespace gmt::interpose {

// X(id, exported symbol, wrapper). The wrappers are defined in the hooks/*.cpp files.
#define GMT_DRIVER_ENTRY_POINTS(X)                                        \
  X(kCuGetProcAddress, "cuGetProcAddress", gmt_cuGetProcAddress)          \
  X(kCuGetProcAddress_v2, "cuGetProcAddress_v2", gmt_cuGetProcAddress_v2) \
  X(kCuMemAlloc, "cuMemAlloc", gmt_cuMemAlloc)                            \
  X(kCuMemAlloc_v2, "cuMemAlloc_v2", gmt_cuMemAlloc_v2)                   \
  X(kCuMemFree, "cuMemFree", gmt_cuMemFree)                               \
  X(kCuMemFree_v2, "cuMemFree_v2", gmt_cuMemFree_v2)

#define GMT_ENTRY_POINT_ENUMERATOR(id, symbol, wrapper) id,
enum class EntryPoint : std::size_t { GMT_DRIVER_ENTRY_POINTS(GMT_ENTRY_POINT_ENUMERATOR) kCount };
#undef GMT_ENTRY_POINT_ENUMERATOR

class DriverEntryPoints {
 public:
  // The driver's own function for `ep`, or nullptr while libcuda is not loaded.
  void* real(EntryPoint ep);

  template <class Fn>
  Fn real_as(EntryPoint ep) {
    return reinterpret_cast<Fn>(real(ep));
  }

  // Given a function the driver handed out (by dlsym or cuGetProcAddress), our wrapper for
  // exactly that ABI; anything we do not track comes back untouched.
  void* wrap(void* driver_function);

  // The ordinal of the calling thread's current context, or -1. Never creates a context.
  int current_device();

 private:
  void resolve();

  std::atomic<void*> real_[static_cast<std::size_t>(EntryPoint::kCount)] = {};
  std::atomic<void*> ctx_get_device_{nullptr};
  std::atomic<bool> resolved_{false};
};

}  // namespace gmt::interpose
