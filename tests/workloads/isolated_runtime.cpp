// SPDX-License-Identifier: Apache-2.0
// Loads the CUDA runtime where an LD_PRELOAD interposer cannot follow it: with RTLD_DEEPBIND
// (the runtime's own references, dlsym among them, bind inside its dependencies first) or with
// dlmopen into a new link-map namespace (which has its own C library and no preload). Allocates
// and frees through it and prints the return codes: the program must behave exactly as
// without the preload.
//   isolated_runtime deepbind|dlmopen
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  void* runtime = nullptr;
  if (std::strcmp(argv[1], "deepbind") == 0) {
    runtime = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  } else if (std::strcmp(argv[1], "dlmopen") == 0) {
    runtime = dlmopen(LM_ID_NEWLM, "libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
  }
  if (runtime == nullptr) {
    std::fprintf(stderr, "isolated_runtime: %s\n", dlerror());
    return 3;
  }
  using Malloc = int (*)(void**, size_t);
  using Free = int (*)(void*);
  auto cuda_malloc = reinterpret_cast<Malloc>(dlsym(runtime, "cudaMalloc"));
  auto cuda_free = reinterpret_cast<Free>(dlsym(runtime, "cudaFree"));
  if (cuda_malloc == nullptr || cuda_free == nullptr) return 3;
  void* p = nullptr;
  std::printf("cudaMalloc -> %d\n", cuda_malloc(&p, 1 << 20));
  std::printf("cudaFree -> %d\n", cuda_free(p));
  return 0;
}
