// SPDX-License-Identifier: Apache-2.0
// The two sets of functions the benchmark compares: the driver's own cuMemAlloc_v2 and
// cuMemFree_v2, and gpumemtrace's wrappers of them. Both live in this one process, so traced and
// untraced calls run side by side on the same machine state, a few milliseconds apart.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string>

namespace gmt::bench {

struct AllocFree {
  CUresult (*alloc)(CUdeviceptr* dptr, std::size_t bytes) = nullptr;
  CUresult (*free)(CUdeviceptr dptr) = nullptr;
};

// The driver's functions, from the libcuda.so.1 this program is linked to.
AllocFree driver_functions();

// The driver's functions, with the allocation preceded by the two questions the wrappers ask the
// driver about every allocation (cuCtxGetCurrent, cuCtxGetDevice: which context and device own
// it). Traced minus this is what the hook itself adds; this minus untraced is what the queries
// cost, which depends on the driver (the simulated one takes its global lock for each).
AllocFree driver_functions_with_context_queries();

// gpumemtrace's exported wrappers, from the preload library at `path`. Throws
// std::runtime_error with the loader's message when it cannot be opened or lacks them.
AllocFree traced_functions(const std::string& path);

}  // namespace gmt::bench
