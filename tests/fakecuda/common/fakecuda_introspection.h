// SPDX-License-Identifier: Apache-2.0
// Functions the fake driver exports besides the CUDA API, for the fake NVML and for tests.
//
// NVML looks them up with dlsym in an already loaded libcuda.so.1 (it never links libcuda);
// tests may call them directly when linked with the fakecuda_driver target.
#pragma once

#include "common/fake_export.h"

extern "C" {

// Device-resident live bytes of this process on CUDA device `device` (an ordinal, after
// CUDA_VISIBLE_DEVICES) plus the overhead of its live contexts there. 0 for an unknown device
// or before cuInit.
FAKECUDA_EXPORT unsigned long long fakecuda_process_used_bytes(int device);

// Live contexts of this process on CUDA device `device` (an active primary context counts once).
FAKECUDA_EXPORT int fakecuda_live_context_count(int device);

using fakecuda_process_used_bytes_fn = unsigned long long (*)(int);
using fakecuda_live_context_count_fn = int (*)(int);

}  // extern "C"
