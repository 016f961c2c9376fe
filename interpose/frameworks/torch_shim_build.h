// SPDX-License-Identifier: Apache-2.0
// Finding the torch that runs and building torch_trace_shim.cpp against its headers, once per
// torch version, C++ ABI and shim source, in a cache shared by every process of the user.
#pragma once

#include <string>

namespace gmt::interpose {

struct TorchShim {
  std::string library;  // the built shim, ready to dlopen; empty when it could not be built
  std::string version;  // torch.__version__, as torch/version.py says
  std::string error;    // why there is no library
};

// `c10_cuda` is the path of the loaded libc10_cuda.so. Blocks while a compiler runs (seconds,
// the first time only); concurrent processes build it once, under a lock in the cache.
TorchShim build_torch_shim(const std::string& c10_cuda);

}  // namespace gmt::interpose
