// SPDX-License-Identifier: Apache-2.0
// Looks the runtime's cudaMalloc up the ways a program probes for CUDA (RTLD_DEFAULT, RTLD_NEXT,
// dlopen(NULL)) before and after loading libcudart.so.13, first privately then globally, and
// allocates through what it found. Prints what it saw, so that a traced and an untraced run can
// be compared: our own exports must not make a missing runtime look present.
#include <dlfcn.h>

#include <cstdio>

namespace {

void probe(const char* when) {
  void* self = dlopen(nullptr, RTLD_NOW);
  std::printf("%s: default=%d next=%d self=%d\n", when,
              dlsym(RTLD_DEFAULT, "cudaMalloc") != nullptr,
              dlsym(RTLD_NEXT, "cudaMalloc") != nullptr, dlsym(self, "cudaMalloc") != nullptr);
}

}  // namespace

int main() {
  probe("no runtime");
  void* local = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
  probe(local != nullptr ? "runtime loaded locally" : "runtime missing");
  void* global = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
  probe(global != nullptr ? "runtime made global" : "runtime missing");
  using Malloc = int (*)(void**, size_t);
  using Free = int (*)(void*);
  auto cuda_malloc = reinterpret_cast<Malloc>(dlsym(RTLD_DEFAULT, "cudaMalloc"));
  auto cuda_free = reinterpret_cast<Free>(dlsym(RTLD_DEFAULT, "cudaFree"));
  if (cuda_malloc == nullptr || cuda_free == nullptr) return 3;
  void* p = nullptr;
  std::printf("cudaMalloc -> %d\n", cuda_malloc(&p, 1 << 20));
  std::printf("cudaFree -> %d\n", cuda_free(p));
  return 0;
}
