// SPDX-License-Identifier: Apache-2.0
// The CUDA driver API as the fake libcuda.so.1 implements it.
//
// __CUDA_API_VERSION_INTERNAL makes cuda.h declare the legacy (pre-_v2) entry points and the
// _ptsz/_ptds per-thread-stream variants next to the current ones, exactly the set a real
// driver exports. __CUDA_API_PUSH_VISIBILITY_DEFAULT wraps those declarations in
// "visibility push(default)", so the cu* API is public while the rest of the library stays
// hidden (-fvisibility=hidden).
#pragma once

#define __CUDA_API_VERSION_INTERNAL
#define __CUDA_API_PUSH_VISIBILITY_DEFAULT
#include <cuda.h>

#include "common/fake_export.h"
#include "common/fakecuda_introspection.h"

namespace fakecuda {
// What cuDriverGetVersion reports, and the newest cudaVersion cuGetProcAddress accepts.
inline constexpr int kDriverVersion = 13000;
}  // namespace fakecuda
