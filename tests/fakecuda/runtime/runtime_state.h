// SPDX-License-Identifier: Apache-2.0
// Runtime state: the per-thread current device and last error, and the primary contexts the
// runtime retained (lazily, like the real one).
#pragma once

#include "runtime/driver_entry_points.h"

namespace fakecuda::runtime {

// Records a failure as the calling thread's last error (cudaGetLastError) and returns it.
cudaError_t record(cudaError_t error);
// The runtime error for a driver result (CUDA_ERROR_OUT_OF_MEMORY -> cudaErrorMemoryAllocation).
cudaError_t translate(CUresult result);
// record(translate(result)).
cudaError_t finish(CUresult result);
// cudaGetLastError (returns and clears) and cudaPeekAtLastError.
cudaError_t take_last_error();
cudaError_t peek_last_error();

// Loads the driver, then makes sure a context is current on the calling thread: a context the
// application made current through the driver API is used as is; otherwise the primary context
// of the thread's current device is retained (once per process, again after cudaDeviceReset)
// and made current.
cudaError_t ensure_context();

int current_device();
// Sets the thread's device and makes its primary context current (CUDA 12 semantics).
cudaError_t set_current_device(int device);
// cuDevicePrimaryCtxReset on the thread's device; the next call retains it again.
cudaError_t reset_current_device();

}  // namespace fakecuda::runtime
