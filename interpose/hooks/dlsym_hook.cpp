// SPDX-License-Identifier: Apache-2.0
// dlsym with a real handle: how cudart, NCCL, cuBLAS, CuPy and XLA reach the driver
// (dlopen("libcuda.so.1") then dlsym). A tracked driver entry point comes back wrapped.
#include <cstring>

#include "interpose/common/real_dlsym.h"
#include "interpose/hooks/lookup_log.h"
#include "interpose/runtime.h"

extern "C" __attribute__((visibility("hidden"))) void* gmt_dlsym_for_handle(void* handle,
                                                                            const char* name) {
  using namespace gmt::interpose;
  DlsymFn real = real_dlsym();
  if (real == nullptr) return nullptr;
  void* symbol = real(handle, name);
  // Python looks up PyInit_<module> as it imports an extension: torch's is when its CUDA
  // allocator becomes loaded.
  if (symbol != nullptr && name != nullptr && std::strncmp(name, "PyInit_", 7) == 0)
    Runtime::get().torch_tracker().extension_loaded();
  // Only driver names can be tracked; the prefix test keeps every other lookup cheap.
  if (symbol == nullptr || name == nullptr || std::strncmp(name, "cu", 2) != 0) return symbol;
  void* handed_out = Runtime::get().entry_points().wrap(symbol);
  log_driver_lookup("dlsym", name, 0, 0, symbol, handed_out);
  return handed_out;
}
