// SPDX-License-Identifier: Apache-2.0
// Streams: cudaStream_t is the driver's CUstream.
#include "runtime/runtime_state.h"

using namespace fakecuda::runtime;

extern "C" {

cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  if (pStream == nullptr) return record(cudaErrorInvalidValue);
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuStreamCreate(pStream, flags));
}

cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t* pStream) {
  return cudaStreamCreateWithFlags(pStream, cudaStreamDefault);
}

cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuStreamDestroy(stream));
}

cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t stream) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuStreamSynchronize(stream));
}

cudaError_t CUDARTAPI cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  if (cudaError_t e = ensure_context(); e != cudaSuccess) return record(e);
  return finish(driver().cuStreamSynchronize_ptsz(stream));
}

}  // extern "C"
