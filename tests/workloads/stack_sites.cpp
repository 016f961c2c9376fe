// SPDX-License-Identifier: Apache-2.0
// Allocates from functions with known names at known lines, through the shared runtime, and
// prints each call's line (`<site>_line=N`) so that a test can check the report's symbolized
// peak sites against them exactly.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

namespace sites {

constexpr size_t kMiB = 1024 * 1024;

__attribute__((noinline)) void* allocate_weights() {
  void* p = nullptr;
  std::printf("weights_line=%d\n", __LINE__ + 1);
  if (cudaMalloc(&p, 96 * kMiB) != cudaSuccess) std::exit(1);
  return p;
}

__attribute__((noinline)) void* allocate_activations(int layer) {
  void* p = nullptr;
  std::printf("activations_line=%d\n", __LINE__ + 1);
  if (cudaMalloc(&p, (layer + 1) * 8 * kMiB) != cudaSuccess) std::exit(1);
  return p;
}

// One call site for every layer: an unrolled loop would make three.
__attribute__((noinline)) void allocate_layers(void** activations, int layers) {
#pragma GCC unroll 1
  for (int layer = 0; layer < layers; ++layer) activations[layer] = allocate_activations(layer);
}

}  // namespace sites

int main() {
  void* weights = sites::allocate_weights();
  void* activations[3];
  sites::allocate_layers(activations, 3);
  for (void* a : activations) cudaFree(a);
  cudaFree(weights);
  return 0;
}
