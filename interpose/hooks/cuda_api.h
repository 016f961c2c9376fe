// SPDX-License-Identifier: Apache-2.0
// The driver API as the driver itself sees it: with __CUDA_API_VERSION_INTERNAL, cuda.h
// declares every ABI under its own exported name (cuMemAlloc is the 32-bit CUDA 2.0 function,
// cuMemAlloc_v2 the current one) instead of mapping the plain names to the newest ABI.
#pragma once

#ifndef __CUDA_API_VERSION_INTERNAL
#define __CUDA_API_VERSION_INTERNAL 1
#endif
#include <cuda.h>
#include <cudaTypedefs.h>
