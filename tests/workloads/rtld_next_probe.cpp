// SPDX-License-Identifier: Apache-2.0
// A library that looks symbols up with dlsym(RTLD_NEXT, …) the way wrapping tools do, and prints
// where each answer lives: "<label> <name> -> <file>:<symbol>". RTLD_NEXT resolves relative to
// the object that calls dlsym, so under the preload every answer must be the same as without it;
// an interposed dlsym that forwarded the lookup as its own would search from the preload library
// instead and find, for instance, this library's own cuMemAlloc_v2 below.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include <cuda.h>

namespace {

// Where `address` lives, by file name (without its folder) and symbol.
void print_resolution(const char* label, const char* name, void* address) {
  if (address == nullptr) {
    std::printf("%s %s -> NULL\n", label, name);
    return;
  }
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) {
    std::printf("%s %s -> unknown object\n", label, name);
    return;
  }
  const char* slash = std::strrchr(info.dli_fname, '/');
  const char* file = slash != nullptr ? slash + 1 : info.dli_fname;
  std::printf("%s %s -> %s:%s\n", label, name, file,
              info.dli_sname != nullptr ? info.dli_sname : "?");
}

}  // namespace

extern "C" {

// This library wraps the driver's cuMemAlloc_v2 itself, as another tool might: its own
// definition is what a lookup that lost track of its caller would find.
CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  using Fn = CUresult (*)(CUdeviceptr*, size_t);
  static Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "cuMemAlloc_v2"));
  return real != nullptr && real != &cuMemAlloc_v2 ? real(dptr, bytesize)
                                                   : CUDA_ERROR_NOT_INITIALIZED;
}

void rtld_next_probe(const char* label) {
  static const char* const kNames[] = {
      "getpid",
      "malloc",
      "puts",
      "dlopen",
      "dlsym",
      "dlvsym",
      "cuInit",
      "cuMemAlloc_v2",
      "cuMemFree_v2",
      "cuGetProcAddress",
      "cuGetProcAddress_v2",
      "gmt_no_such_symbol_anywhere",
  };
  for (const char* name : kNames) print_resolution(label, name, dlsym(RTLD_NEXT, name));
  print_resolution(label, "dlsym@GLIBC_2.34", dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"));
  print_resolution(label, "dlsym@GLIBC_2.2.5", dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5"));
  std::fflush(stdout);
}
}
