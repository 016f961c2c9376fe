// SPDX-License-Identifier: Apache-2.0
// Two CUDA runtimes in one process: the program's libcudart.so.13, and libcudart.so.12 under a
// library it loads with RTLD_LOCAL. Each runtime keeps its own last error, so a failure shows
// which runtime served the call: the library's failed cudaMalloc must set the library's
// runtime's error, never the program's. Prints one line per call.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

void* must(void* p, const char* what) {
  if (p == nullptr) {
    std::fprintf(stderr, "two_runtimes: %s: %s\n", what, dlerror());
    std::exit(3);
  }
  return p;
}

template <class Fn>
Fn symbol(void* library, const char* name) {
  return reinterpret_cast<Fn>(must(dlsym(library, name), name));
}

// The plugin sits next to this program. By path: a sanitizer's dlopen does not search the
// caller's RUNPATH.
std::string beside_this_program(const char* name) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return name;
  std::string path(self, static_cast<std::size_t>(n));
  return path.substr(0, path.rfind('/') + 1) + name;
}

}  // namespace

int main() {
  const std::string plugin = beside_this_program("libgmt_runtime12_user.so");
  void* library = must(dlopen(plugin.c_str(), RTLD_NOW | RTLD_LOCAL), "dlopen");
  auto allocate12 = symbol<int (*)(size_t, void**)>(library, "runtime12_allocate");
  auto free12 = symbol<int (*)(void*)>(library, "runtime12_free");
  auto last_error12 = symbol<int (*)()>(library, "runtime12_last_error");
  const size_t too_much = size_t{1} << 50;

  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
  void* d = nullptr;
  std::printf("program cudaMalloc 4 MiB -> %d\n", cudaMalloc(&a, 4 << 20));
  std::printf("library cudaMalloc 8 MiB -> %d\n", allocate12(8 << 20, &b));
  std::printf("library cudaMalloc 1 PiB -> %d\n", allocate12(too_much, &c));
  std::printf("library last error -> %d\n", last_error12());
  std::printf("program last error -> %d\n", static_cast<int>(cudaGetLastError()));
  std::printf("program cudaMalloc 1 PiB -> %d\n", cudaMalloc(&c, too_much));
  std::printf("library last error -> %d\n", last_error12());
  std::printf("program last error -> %d\n", static_cast<int>(cudaGetLastError()));
  std::printf("library cudaMalloc 16 MiB -> %d\n", allocate12(16 << 20, &d));
  std::printf("library cudaFree -> %d\n", free12(b));
  std::printf("program cudaFree -> %d\n", cudaFree(a));
  return 0;
}
