// SPDX-License-Identifier: Apache-2.0
// A long run for bounded traces: memory held from the start, a churn of allocations and frees
// that writes most of the trace, a leak that grows all along, and a spike near the end. Its live
// memory is known at every moment, so a bounded trace's report can be checked against an
// unbounded one's.
//
//   workload_bounded_history ITERATIONS
//
// Prints "done" after the last iteration.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

void* allocate(size_t size) {
  void* p = nullptr;
  if (cudaMalloc(&p, size) != cudaSuccess) {
    std::fprintf(stderr, "cudaMalloc(%zu) failed\n", size);
    std::exit(3);
  }
  return p;
}

// Each site in a function of its own, so that each has a stack of its own.
__attribute__((noinline)) void* held_buffer() {
  return allocate(1 << 20);  // 8 of them, held from start to exit
}
__attribute__((noinline)) void churn(long i) {
  void* p = allocate(4096 * static_cast<size_t>(i % 16 + 1));
  cudaFree(p);
}
__attribute__((noinline)) void* leaked_buffer() {
  return allocate(65536);  // every 10000 iterations, never freed
}
__attribute__((noinline)) void spike() {
  void* p = allocate(256u << 20);  // once, 1000 iterations before the end
  cudaFree(p);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: workload_bounded_history ITERATIONS\n");
    return 2;
  }
  const long iterations = std::atol(argv[1]);
  std::vector<void*> held;
  for (int i = 0; i < 8; ++i) held.push_back(held_buffer());
  std::vector<void*> leaked;
  for (long i = 0; i < iterations; ++i) {
    churn(i);
    if (i % 10000 == 0) leaked.push_back(leaked_buffer());
    if (i == iterations - 1000) spike();
  }
  std::printf("done\n");
  return 0;
}
