// SPDX-License-Identifier: Apache-2.0
// dlclose: a library that leaves the process takes its unwind rules with it, and another may be
// loaded at its addresses. The native stack walker caches rules and walks by address, so it is
// told to start again.
#include <dlfcn.h>
#include <link.h>

#include <cstdint>

#include "interpose/common/real_dlsym.h"
#include "interpose/export.h"
#include "interpose/runtime.h"

namespace {

using DlcloseFn = int (*)(void*);

// Found when the library is loaded: a dlclose may come from a child of a multithreaded fork,
// where the loader's lock may not be taken.
DlcloseFn g_real_dlclose = nullptr;

__attribute__((constructor)) void find_real_dlclose() {
  gmt::interpose::DlsymFn dlsym_fn = gmt::interpose::real_dlsym();
  if (dlsym_fn != nullptr)
    g_real_dlclose = reinterpret_cast<DlcloseFn>(dlsym_fn(RTLD_NEXT, "dlclose"));
}

int read_unloads(dl_phdr_info* info, size_t, void* data) {
  *static_cast<uint64_t*>(data) = info->dlpi_subs;
  return 1;
}

// How many modules the loader has unloaded so far: most dlclose calls only drop a reference.
uint64_t unloads() {
  uint64_t count = 0;
  dl_iterate_phdr(read_unloads, &count);
  return count;
}

}  // namespace

extern "C" GMT_EXPORT int dlclose(void* handle) __THROW {
  if (g_real_dlclose == nullptr) find_real_dlclose();
  if (g_real_dlclose == nullptr) return -1;
  const uint64_t before = unloads();
  const int result = g_real_dlclose(handle);
  const uint64_t after = unloads();
  if (after != before) gmt::interpose::Runtime::get().events().modules_unloaded();
  return result;
}
