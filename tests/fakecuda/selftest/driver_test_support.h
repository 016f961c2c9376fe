// SPDX-License-Identifier: Apache-2.0
// Driver-level tests see the legacy entry points too, as the fake driver declares them.
#pragma once

#define __CUDA_API_VERSION_INTERNAL
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "common/fakecuda_introspection.h"
#include "selftest/scenario.h"

namespace fakecuda_test {

// An exported driver symbol, looked up in libcuda.so.1 itself (not the program's PLT).
inline void* driver_symbol(const char* name) {
  void* driver = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
  void* symbol = driver != nullptr ? dlsym(driver, name) : nullptr;
  if (driver != nullptr) dlclose(driver);
  return symbol;
}

// cuInit, then the device's primary context retained and made current.
inline CUcontext init_primary(CUdevice device = 0) {
  CUcontext ctx = nullptr;
  EXPECT_EQ(cuInit(0), CUDA_SUCCESS);
  EXPECT_EQ(cuDevicePrimaryCtxRetain(&ctx, device), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  return ctx;
}

inline size_t free_bytes() {
  size_t free = 0;
  size_t total = 0;
  EXPECT_EQ(cuMemGetInfo_v2(&free, &total), CUDA_SUCCESS);
  return free;
}

}  // namespace fakecuda_test
