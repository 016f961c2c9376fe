// dlsym with a real handle: how cudart, NCCL, cuBLAS, CuPy and XLA reach the driver
// (dlopen("libcuda.so.1") then dlsym). A tracked driver entry point comes back wrapped.
#include <cstring>

#include "interpose/hooks/lookup_log.h"
#include "interpose/hooks/real_dlsym.h"
#include "interpose/runtime.h"

extern "C" bool gmt_runtime_export_symbol_unbacked(const void* symbol, const void* caller);
extern "C" bool gmt_runtime_export_unbacked(const char* name, const void* caller);

// Reached before anything is initialized (see real_dlsym.cpp): uninstrumented.
#define GMT_UNINSTRUMENTED __attribute__((no_sanitize("address", "undefined")))

extern "C" __attribute__((visibility("hidden"))) void* gmt_dlsym_for_handle(void* handle,
                                                                            const char* name) {
  using namespace gmt::interpose;
  DlsymFn real = real_dlsym();
  if (real == nullptr) return nullptr;
  void* symbol = real(handle, name);
  // dlopen(NULL) searches the global scope, where our runtime exports come first.
  if (symbol != nullptr && name != nullptr && std::strncmp(name, "cuda", 4) == 0 &&
      gmt_runtime_export_symbol_unbacked(symbol, nullptr)) {
    return nullptr;
  }
  // Only driver names can be tracked; the prefix test keeps every other lookup cheap.
  if (symbol == nullptr || name == nullptr || std::strncmp(name, "cu", 2) != 0) return symbol;
  void* handed_out = Runtime::get().entry_points().wrap(symbol);
  log_driver_lookup("dlsym", name, 0, 0, symbol, handed_out);
  return handed_out;
}

// Called by the assembly trampoline (dlsym_trampoline.S) for RTLD_DEFAULT and RTLD_NEXT: the
// real dlsym to jump to, or nullptr for "not found" (a CUDA runtime name that only our export
// would answer). The prefix test is uninstrumented and keeps every other lookup cheap.
extern "C" __attribute__((visibility("hidden"))) GMT_UNINSTRUMENTED void* gmt_resolve_real_dlsym(
    const char* name, const void* caller) {
  if (name != nullptr && name[0] == 'c' && name[1] == 'u' && name[2] == 'd' && name[3] == 'a' &&
      gmt_runtime_export_unbacked(name, caller)) {
    return nullptr;
  }
  return reinterpret_cast<void*>(gmt::interpose::real_dlsym());
}
