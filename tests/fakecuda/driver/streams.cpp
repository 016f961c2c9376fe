// SPDX-License-Identifier: Apache-2.0
// Streams: handles that remember their context (stream-ordered allocations need its device).
#include "driver/driver_state.h"

using namespace fakecuda;

namespace {

CUresult destroy_stream(CUstream hStream) {
  State& s = state();
  DriverLock lock(s.mutex);
  if (CUresult r = require_initialized(s); r != CUDA_SUCCESS) return r;
  if (s.streams.erase(hStream) == 0) return CUDA_ERROR_INVALID_HANDLE;
  delete hStream;
  return CUDA_SUCCESS;
}

CUresult synchronize_stream(CUstream hStream) {
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* ctx = nullptr;
  return context_of_stream(s, hStream, &ctx);
}

}  // namespace

namespace fakecuda {

void destroy_context_streams(State& s, CUctx_st* ctx) {
  for (auto it = s.streams.begin(); it != s.streams.end();) {
    if ((*it)->ctx == ctx) {
      delete *it;
      it = s.streams.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace fakecuda

extern "C" {

CUresult CUDAAPI cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  if (phStream == nullptr || (Flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  State& s = state();
  DriverLock lock(s.mutex);
  CUctx_st* ctx = nullptr;
  if (CUresult r = require_context(s, &ctx); r != CUDA_SUCCESS) return r;
  auto* stream = new CUstream_st{ctx, Flags};
  s.streams.insert(stream);
  *phStream = stream;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream) {
  return destroy_stream(hStream);
}
CUresult CUDAAPI cuStreamDestroy(CUstream hStream) {
  return destroy_stream(hStream);
}

CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) {
  return synchronize_stream(hStream);
}
CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream) {
  return synchronize_stream(hStream);
}

}  // extern "C"
