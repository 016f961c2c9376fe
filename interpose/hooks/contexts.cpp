// SPDX-License-Identifier: Apache-2.0
// Context teardown frees everything the context still owns: cuCtxDestroy, a primary context
// reset (cudaDeviceReset) and the release of a primary context's last reference.
#include "interpose/hooks/hook.h"
#include "interpose/hooks/wrappers.h"

using gmt::format::Api;
using gmt::interpose::DriverQuery;
using gmt::interpose::Hook;

namespace {

bool primary_active(Hook& hook, CUdevice device) {
  auto get_state = hook.runtime().entry_points().query_as<PFN_cuDevicePrimaryCtxGetState_v7000>(
      DriverQuery::cuDevicePrimaryCtxGetState);
  unsigned int flags = 0;
  int active = 0;
  return get_state != nullptr && get_state(device, &flags, &active) == CUDA_SUCCESS && active != 0;
}

// The primary context's handle, only if it exists: retaining an active primary context and
// releasing it again leaves it as it was, whereas retaining an inactive one would create it.
uint64_t active_primary_context(Hook& hook, CUdevice device) {
  if (!primary_active(hook, device)) return 0;
  auto& driver = hook.runtime().entry_points();
  auto retain =
      driver.query_as<PFN_cuDevicePrimaryCtxRetain_v7000>(DriverQuery::cuDevicePrimaryCtxRetain);
  auto release = driver.query_as<PFN_cuDevicePrimaryCtxRelease_v11000>(
      DriverQuery::cuDevicePrimaryCtxRelease_v2);
  CUcontext ctx = nullptr;
  if (retain == nullptr || release == nullptr || retain(&ctx, device) != CUDA_SUCCESS) return 0;
  release(device);
  return reinterpret_cast<uint64_t>(ctx);
}

template <class Fn>
CUresult destroy_context(Hook& hook, Fn real, CUcontext ctx) {
  hook.runtime().contexts_changing();
  if (hook.outermost() && ctx != nullptr) {
    hook.events().context_destroying(reinterpret_cast<uint64_t>(ctx), Api::kCuCtxDestroy);
  }
  return real(ctx);
}

// The sampler reads a device through a reference to its primary context; holding its teardown
// lock across the real call keeps that reference from being the one that outlives the program's.
class TeardownLock {
 public:
  explicit TeardownLock(Hook& hook) : views_(hook.runtime().driver_views()) {
    views_.lock_teardown();
  }
  ~TeardownLock() { views_.unlock_teardown(); }
  TeardownLock(const TeardownLock&) = delete;
  TeardownLock& operator=(const TeardownLock&) = delete;

 private:
  gmt::interpose::DriverViews& views_;
};

template <class Fn>
CUresult reset_primary(Hook& hook, Fn real, CUdevice device) {
  hook.runtime().contexts_changing();
  if (hook.outermost()) {
    if (const uint64_t ctx = active_primary_context(hook, device)) {
      hook.events().context_destroying(ctx, Api::kCuDevicePrimaryCtxReset);
    }
  }
  TeardownLock lock(hook);
  return real(device);
}

// Whether this release is the last is known only afterwards, so the teardown is stamped after
// the real call.
template <class Fn>
CUresult release_primary(Hook& hook, Fn real, CUdevice device) {
  hook.runtime().contexts_changing();
  const uint64_t ctx = hook.outermost() ? active_primary_context(hook, device) : 0;
  CUresult result;
  bool gone = false;
  {
    TeardownLock lock(hook);
    result = real(device);
    gone = result == CUDA_SUCCESS && !primary_active(hook, device);
  }
  if (ctx != 0 && gone) {
    hook.events().context_destroying(ctx, Api::kCuDevicePrimaryCtxRelease);
  }
  return result;
}

}  // namespace

extern "C" {

CUresult gmt_cuCtxDestroy_v2(CUcontext ctx) {
  Hook hook;
  return destroy_context(hook, GMT_REAL(hook, cuCtxDestroy_v2), ctx);
}

CUresult gmt_cuCtxDestroy(CUcontext ctx) {
  Hook hook;
  return destroy_context(hook, GMT_REAL(hook, cuCtxDestroy), ctx);
}

CUresult gmt_cuDevicePrimaryCtxReset_v2(CUdevice device) {
  Hook hook;
  return reset_primary(hook, GMT_REAL(hook, cuDevicePrimaryCtxReset_v2), device);
}

CUresult gmt_cuDevicePrimaryCtxReset(CUdevice device) {
  Hook hook;
  return reset_primary(hook, GMT_REAL(hook, cuDevicePrimaryCtxReset), device);
}

CUresult gmt_cuDevicePrimaryCtxRelease_v2(CUdevice device) {
  Hook hook;
  return release_primary(hook, GMT_REAL(hook, cuDevicePrimaryCtxRelease_v2), device);
}

CUresult gmt_cuDevicePrimaryCtxRelease(CUdevice device) {
  Hook hook;
  return release_primary(hook, GMT_REAL(hook, cuDevicePrimaryCtxRelease), device);
}

GMT_EXPORT_WRAPPER(cuCtxDestroy_v2)
GMT_EXPORT_WRAPPER(cuCtxDestroy)
GMT_EXPORT_WRAPPER(cuDevicePrimaryCtxReset_v2)
GMT_EXPORT_WRAPPER(cuDevicePrimaryCtxReset)
GMT_EXPORT_WRAPPER(cuDevicePrimaryCtxRelease_v2)
GMT_EXPORT_WRAPPER(cuDevicePrimaryCtxRelease)
}
