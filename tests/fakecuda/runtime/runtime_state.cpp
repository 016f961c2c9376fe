// SPDX-License-Identifier: Apache-2.0
#include "runtime/runtime_state.h"

#include <mutex>
#include <vector>

namespace fakecuda::runtime {
namespace {

thread_local int t_device = 0;
thread_local cudaError_t t_last_error = cudaSuccess;

// Primary contexts this runtime holds a reference on, by device.
std::mutex g_mutex;
std::vector<CUcontext> g_primary;
std::vector<bool> g_retained;

bool is_known_primary(CUcontext ctx, int* device) {
  for (size_t i = 0; i < g_primary.size(); ++i) {
    if (g_primary[i] == ctx && ctx != nullptr) {
      *device = static_cast<int>(i);
      return true;
    }
  }
  return false;
}

CUresult retain_primary(int device, CUcontext* ctx) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_primary.empty()) {
    int count = 0;
    if (CUresult r = driver().cuDeviceGetCount(&count); r != CUDA_SUCCESS) return r;
    g_primary.assign(static_cast<size_t>(count), nullptr);
    g_retained.assign(static_cast<size_t>(count), false);
  }
  if (device < 0 || static_cast<size_t>(device) >= g_primary.size()) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  if (!g_retained[static_cast<size_t>(device)]) {
    CUcontext retained = nullptr;
    if (CUresult r = driver().cuDevicePrimaryCtxRetain(&retained, device); r != CUDA_SUCCESS) {
      return r;
    }
    g_primary[static_cast<size_t>(device)] = retained;
    g_retained[static_cast<size_t>(device)] = true;
  }
  *ctx = g_primary[static_cast<size_t>(device)];
  return CUDA_SUCCESS;
}

cudaError_t make_primary_current(int device) {
  CUcontext primary = nullptr;
  if (CUresult r = retain_primary(device, &primary); r != CUDA_SUCCESS) return translate(r);
  CUcontext current = nullptr;
  if (CUresult r = driver().cuCtxGetCurrent(&current); r != CUDA_SUCCESS) return translate(r);
  if (current != primary) {
    if (CUresult r = driver().cuCtxSetCurrent(primary); r != CUDA_SUCCESS) return translate(r);
  }
  return cudaSuccess;
}

}  // namespace

cudaError_t record(cudaError_t error) {
  if (error != cudaSuccess) t_last_error = error;
  return error;
}

cudaError_t finish(CUresult result) {
  return record(translate(result));
}

cudaError_t take_last_error() {
  cudaError_t error = t_last_error;
  t_last_error = cudaSuccess;
  return error;
}

cudaError_t peek_last_error() {
  return t_last_error;
}

cudaError_t ensure_context() {
  if (cudaError_t e = load_driver(); e != cudaSuccess) return e;
  CUcontext current = nullptr;
  if (CUresult r = driver().cuCtxGetCurrent(&current); r != CUDA_SUCCESS) return translate(r);
  int device = t_device;
  bool primary = false;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    primary = is_known_primary(current, &device);
  }
  if (current != nullptr && !primary) return cudaSuccess;  // the application's own context
  t_device = device;
  return make_primary_current(device);
}

int current_device() {
  return t_device;
}

cudaError_t set_current_device(int device) {
  if (cudaError_t e = load_driver(); e != cudaSuccess) return e;
  int count = 0;
  if (CUresult r = driver().cuDeviceGetCount(&count); r != CUDA_SUCCESS) return translate(r);
  if (device < 0 || device >= count) return cudaErrorInvalidDevice;
  t_device = device;
  return make_primary_current(device);
}

cudaError_t reset_current_device() {
  if (cudaError_t e = load_driver(); e != cudaSuccess) return e;
  std::lock_guard<std::mutex> lock(g_mutex);
  int device = t_device;
  if (CUresult r = driver().cuDevicePrimaryCtxReset(device); r != CUDA_SUCCESS) {
    return translate(r);
  }
  if (static_cast<size_t>(device) < g_retained.size()) {
    g_retained[static_cast<size_t>(device)] = false;
  }
  return cudaSuccess;
}

}  // namespace fakecuda::runtime
