// SPDX-License-Identifier: Apache-2.0
// Test-only LD_PRELOAD library that watches the runtime reach the driver the way an
// interposer does: it hooks dlsym, hands out a wrapped cuGetProcAddress_v2, wraps the answers
// to the requests for "cuGetProcAddress" itself (both ABIs) and logs every request to
// $FAKECUDA_PROBE_LOG. It also exports trap versions of cuMemAlloc_v2 and cuMemGetInfo_v2: if
// any fake library reached an exported driver symbol through the PLT, the program aborts.
//
// Its dlsym forwards with the real dlsym, which changes the caller seen by RTLD_NEXT lookups;
// the probes make none.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

void log_line(const char* format, ...) {
  static FILE* file = [] {
    const char* path = std::getenv("FAKECUDA_PROBE_LOG");
    FILE* opened = path != nullptr ? std::fopen(path, "a") : nullptr;
    return opened != nullptr ? opened : stderr;
  }();
  va_list arguments;
  va_start(arguments, format);
  std::vfprintf(file, format, arguments);
  va_end(arguments);
  std::fflush(file);
}

using DlsymFunction = void* (*)(void*, const char*);

DlsymFunction real_dlsym() {
  static DlsymFunction function = [] {
    void* found = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (found == nullptr) found = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    return reinterpret_cast<DlsymFunction>(found);
  }();
  return function;
}

PFN_cuGetProcAddress_v12000 g_real_v2 = nullptr;
PFN_cuGetProcAddress_v11030 g_real_legacy = nullptr;

CUresult wrapped_legacy(const char* symbol, void** pfn, int version, cuuint64_t flags);

// Replaces the answer to "cuGetProcAddress" with the wrapper of the same ABI.
void wrap_answer(const char* symbol, void** pfn) {
  if (std::strcmp(symbol, "cuGetProcAddress") != 0 || *pfn == nullptr) return;
  if (*pfn == reinterpret_cast<void*>(g_real_v2)) return;  // wrapped below
  g_real_legacy = reinterpret_cast<PFN_cuGetProcAddress_v11030>(*pfn);
  *pfn = reinterpret_cast<void*>(&wrapped_legacy);
}

CUresult wrapped_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                    CUdriverProcAddressQueryResult* status) {
  log_line("v2 %s %d %llu\n", symbol, version, static_cast<unsigned long long>(flags));
  CUresult result = g_real_v2(symbol, pfn, version, flags, status);
  if (result == CUDA_SUCCESS && *pfn != nullptr && std::strcmp(symbol, "cuGetProcAddress") == 0) {
    if (*pfn == reinterpret_cast<void*>(g_real_v2)) {
      *pfn = reinterpret_cast<void*>(&wrapped_v2);
    } else {
      wrap_answer(symbol, pfn);
    }
  }
  return result;
}

CUresult wrapped_legacy(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  log_line("legacy %s %d %llu\n", symbol, version, static_cast<unsigned long long>(flags));
  CUresult result = g_real_legacy(symbol, pfn, version, flags);
  if (result == CUDA_SUCCESS && *pfn == reinterpret_cast<void*>(g_real_v2)) {
    *pfn = reinterpret_cast<void*>(&wrapped_v2);
  }
  return result;
}

}  // namespace

#pragma GCC visibility push(default)

extern "C" void* dlsym(void* __restrict handle, const char* __restrict name) __THROW {
  void* result = real_dlsym()(handle, name);
  if (result != nullptr && std::strcmp(name, "cuGetProcAddress_v2") == 0) {
    log_line("dlsym cuGetProcAddress_v2\n");
    g_real_v2 = reinterpret_cast<PFN_cuGetProcAddress_v12000>(result);
    return reinterpret_cast<void*>(&wrapped_v2);
  }
  return result;
}

extern "C" CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr*, size_t) {
  log_line("TRAP cuMemAlloc_v2\n");
  std::abort();
}

extern "C" CUresult CUDAAPI cuMemGetInfo_v2(size_t*, size_t*) {
  log_line("TRAP cuMemGetInfo_v2\n");
  std::abort();
}

#pragma GCC visibility pop
