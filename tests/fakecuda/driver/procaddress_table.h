// SPDX-License-Identifier: Apache-2.0
// The table behind cuGetProcAddress: every driver entry point under its base name, with the
// CUDA version that introduced each ABI (the suffix of the PFN_*_vNNNNN typedefs in
// cudaTypedefs.h) and, where one exists, its per-thread-default-stream variant.
#pragma once

#include <span>

namespace fakecuda {

struct ProcAddressEntry {
  const char* name;  // base name, as callers ask for it: "cuMemAlloc"
  int version;       // first CUDA version of this ABI: 3020 for cuMemAlloc_v2
  void* function;
  void* per_thread;  // the _ptsz/_ptds variant, or nullptr
};

std::span<const ProcAddressEntry> procaddress_table();

}  // namespace fakecuda
