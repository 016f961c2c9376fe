// SPDX-License-Identifier: Apache-2.0
// What every wrapper does first: find the runtime and the real function, and mark this thread
// as inside a hook so that nested driver calls pass straight through unrecorded.
#pragma once

#include "interpose/common/depth_guard.h"
#include "interpose/hooks/cuda_api.h"
#include "interpose/runtime.h"

namespace gmt::interpose {

// Stands in for a driver function that cannot be found (libcuda not loaded): the call fails
// the way a driver that is not there would, instead of jumping to address zero.
template <class Fn>
struct NotInitialized;
template <class... Args>
struct NotInitialized<CUresult (*)(Args...)> {
  static CUresult call(Args...) { return CUDA_ERROR_NOT_INITIALIZED; }
};

class Hook {
 public:
  // Before the program's own call runs: PyTorch's allocator gets its tracker before it takes
  // its first segment (torch_tracker.h).
  Hook() : rt_(Runtime::get()) {
    if (guard_.outermost()) rt_.torch_tracker().maybe_attach();
  }

  // Whether this call came from the program rather than from the driver or from us.
  bool outermost() const { return guard_.outermost(); }
  Runtime& runtime() { return rt_; }
  EventRecorder& events() { return rt_.events(); }

  template <class Fn>
  Fn real(EntryPoint ep) {
    Fn fn = rt_.entry_points().real_as<Fn>(ep);
    return fn != nullptr ? fn : &NotInitialized<Fn>::call;
  }

  // The calling thread's current context and its device ({0, -1} when there is none).
  struct Current {
    uint64_t context = 0;
    int device = -1;
  };
  Current current();

  // Records an allocation's outcome: call after the real function returned.
  void allocated(CUresult result, format::MemoryKind kind, format::Api api, uint64_t address,
                 uint64_t size, Current owner) {
    rt_.events().allocation(static_cast<uint32_t>(result), owner.device, owner.context, kind, api,
                            result == CUDA_SUCCESS ? address : 0, size);
  }

 private:
  Runtime& rt_;
  DepthGuard guard_;
};

// The real function of entry point `name`, with its exact type.
#define GMT_REAL(hook, name) (hook).real<decltype(&::name)>(::gmt::interpose::EntryPoint::name)

}  // namespace gmt::interpose
