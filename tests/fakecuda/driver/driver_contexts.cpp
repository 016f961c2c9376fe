// SPDX-License-Identifier: Apache-2.0
// Contexts created by cuCtxCreate, and the per-thread stack of current contexts.
#include "driver/driver_state.h"

using namespace fakecuda;

namespace {

// Plain thread-local storage (no destructors), so it works in any thread at any time.
constexpr int kMaxStackDepth = 64;
thread_local CUctx_st* t_stack[kMaxStackDepth];
thread_local int t_depth = 0;

CUresult push(CUctx_st* ctx) {
  if (t_depth == kMaxStackDepth) return CUDA_ERROR_OUT_OF_MEMORY;
  t_stack[t_depth++] = ctx;
  return CUDA_SUCCESS;
}

CUresult create_context(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  if (pctx == nullptr || (flags & ~static_cast<unsigned>(CU_CTX_FLAGS_MASK)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_device(s, dev); r != CUDA_SUCCESS) return r;
  if (t_depth == kMaxStackDepth) return CUDA_ERROR_OUT_OF_MEMORY;
  auto* ctx = new CUctx_st;
  ctx->device = dev;
  ctx->flags = flags;
  if (CUresult r = activate_context(s, ctx); r != CUDA_SUCCESS) {
    delete ctx;
    return r;
  }
  // Context objects are never freed: handles held by other threads stay safe to compare.
  s.contexts.insert(ctx);
  push(ctx);
  *pctx = ctx;
  return CUDA_SUCCESS;
}

// The context a *_v2 query names, or the current one for NULL.
CUresult resolve_context(const State& s, CUcontext ctx, CUctx_st** out) {
  if (ctx == nullptr) return require_context(s, out);
  if (!s.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (s.contexts.count(ctx) == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (!ctx->alive) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *out = ctx;
  return CUDA_SUCCESS;
}

}  // namespace

namespace fakecuda {

CUctx_st* current_context() {
  return t_depth == 0 ? nullptr : t_stack[t_depth - 1];
}

}  // namespace fakecuda

extern "C" {

CUresult CUDAAPI cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return create_context(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return create_context(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams,
                                unsigned int flags, CUdevice dev) {
  if (numParams < 0 || (numParams > 0 && paramsArray == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  return create_context(pctx, flags, dev);
}

// Neither execution affinity nor CIG parameters change what the fake simulates.
CUresult CUDAAPI cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* ctxCreateParams,
                                unsigned int flags, CUdevice dev) {
  (void)ctxCreateParams;
  return create_context(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  if (ctx == nullptr || s.contexts.count(ctx) == 0 || ctx->primary) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (!ctx->alive) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  deactivate_context(s, ctx);
  if (current_context() == ctx) --t_depth;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxDestroy(CUcontext ctx) {
  return cuCtxDestroy_v2(ctx);
}

// Lock-free, like the real driver's: the current context is the calling thread's own. (A global
// lock here would make every caller that asks for it, the recorder's hooks among them, look
// serialized in benchmarks on many cores.)
CUresult CUDAAPI cuCtxGetCurrent(CUcontext* pctx) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const State& s = state();
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  *pctx = current_context();
  return CUDA_SUCCESS;
}

// Replaces the top of the stack; NULL pops it (as documented).
CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  if (ctx == nullptr) {
    if (t_depth > 0) --t_depth;
    return CUDA_SUCCESS;
  }
  if (s.contexts.count(ctx) == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (t_depth == 0) return push(ctx);
  t_stack[t_depth - 1] = ctx;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  if (ctx == nullptr || s.contexts.count(ctx) == 0) return CUDA_ERROR_INVALID_CONTEXT;
  return push(ctx);
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) {
  return cuCtxPushCurrent_v2(ctx);
}

CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext* pctx) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  if (t_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
  CUctx_st* popped = t_stack[--t_depth];
  if (pctx != nullptr) *pctx = popped;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext* pctx) {
  return cuCtxPopCurrent_v2(pctx);
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* ctx = nullptr;
  if (CUresult r = require_context(s, &ctx); r != CUDA_SUCCESS) return r;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* resolved = nullptr;
  if (CUresult r = resolve_context(s, ctx, &resolved); r != CUDA_SUCCESS) return r;
  *device = resolved->device;
  return CUDA_SUCCESS;
}

// Nothing ever runs asynchronously in the fake.
CUresult CUDAAPI cuCtxSynchronize(void) {
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* ctx = nullptr;
  return require_context(s, &ctx);
}

CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx) {
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* resolved = nullptr;
  return resolve_context(s, ctx, &resolved);
}

}  // extern "C"
