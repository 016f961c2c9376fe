// SPDX-License-Identifier: Apache-2.0
#include "interpose/common/real_dlsym.h"

#include <dlfcn.h>

// dlsym is reached before anything else is initialized: a sanitizer runtime preloaded ahead of us
// resolves its interceptors with dlsym(RTLD_NEXT) before it has even mapped its shadow memory.
// So nothing here may be instrumented, and nothing here may depend on a constructor having run.
#define GMT_UNINSTRUMENTED __attribute__((no_sanitize("address", "undefined")))

namespace gmt::interpose {
namespace {

// A write-once cache kept outside the runtime object on purpose (see above). Plain pointer with
// __atomic builtins: std::atomic's member functions would be instrumented code.
DlsymFn g_real_dlsym = nullptr;

GMT_UNINSTRUMENTED DlsymFn find_real_dlsym() {
  // glibc 2.34 moved dlsym into libc under a new version; older ones only have 2.2.5.
  void* fn = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (fn == nullptr) fn = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  return reinterpret_cast<DlsymFn>(fn);
}

}  // namespace

GMT_UNINSTRUMENTED DlsymFn real_dlsym() {
  DlsymFn fn = __atomic_load_n(&g_real_dlsym, __ATOMIC_ACQUIRE);
  if (fn == nullptr) {
    fn = find_real_dlsym();
    __atomic_store_n(&g_real_dlsym, fn, __ATOMIC_RELEASE);
  }
  return fn;
}

}  // namespace gmt::interpose

// Called by the assembly trampoline (dlsym_trampoline.S).
extern "C" __attribute__((visibility("hidden"))) GMT_UNINSTRUMENTED void* gmt_resolve_real_dlsym() {
  return reinterpret_cast<void*>(gmt::interpose::real_dlsym());
}
