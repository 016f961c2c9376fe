// SPDX-License-Identifier: Apache-2.0
#include "tests/bench/device_context.h"

#include <cuda.h>

namespace gmt::bench {

bool make_primary_context_current() {
  // A function-local static: initialized once, by the first thread, while the others wait.
  static const CUcontext primary = [] {
    CUcontext ctx = nullptr;
    CUdevice device = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, device) != CUDA_SUCCESS) {
      return CUcontext{nullptr};
    }
    return ctx;
  }();
  return primary != nullptr && cuCtxSetCurrent(primary) == CUDA_SUCCESS;
}

}  // namespace gmt::bench
