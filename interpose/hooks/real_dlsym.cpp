#include "interpose/hooks/real_dlsym.h"

#include <dlfcn.h>

#include <atomic>

namespace gmt::interpose {
namespace {

// A write-once cache kept outside the runtime object on purpose: dlsym is reached before any
// constructor has run (sanitizer runtimes and other preloads resolve their functions first),
// and finding it must not depend on anything being initialized.
std::atomic<DlsymFn> g_real_dlsym{nullptr};

DlsymFn find_real_dlsym() {
  // glibc 2.34 moved dlsym into libc under a new version; older ones only have 2.2.5.
  for (const char* version : {"GLIBC_2.34", "GLIBC_2.2.5"}) {
    if (void* fn = dlvsym(RTLD_NEXT, "dlsym", version)) return reinterpret_cast<DlsymFn>(fn);
  }
  return nullptr;
}

}  // namespace

DlsymFn real_dlsym() {
  DlsymFn fn = g_real_dlsym.load(std::memory_order_acquire);
  if (fn == nullptr) {
    fn = find_real_dlsym();
    g_real_dlsym.store(fn, std::memory_order_release);
  }
  return fn;
}

}  // namespace gmt::interpose

// Called by the assembly trampoline (dlsym_trampoline.S).
extern "C" __attribute__((visibility("hidden"))) void* gmt_resolve_real_dlsym() {
  return reinterpret_cast<void*>(gmt::interpose::real_dlsym());
}
