// SPDX-License-Identifier: Apache-2.0
// A small imitation of a training loop on the simulated GPU, for the README's demo. It plants
// what gpumemtrace is for: a peak (one step needs a large temporary workspace), a leak (a
// metrics buffer allocated every step and never freed) and an out-of-memory error that the
// program survives (an oversized batch, retried smaller). Its phases are marked with
// gpumemtrace.h, and with a second device it keeps an evaluation copy of the weights there.
#include <cuda_runtime_api.h>

#include "include/gpumemtrace.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr size_t kMiB = 1024 * 1024;

void* must_allocate(size_t bytes, const char* what) {
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    std::fprintf(stderr, "demo: cannot allocate %s (%zu bytes)\n", what, bytes);
    std::exit(1);
  }
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 20;
  const int peak_step = steps / 2;

  gpumemtrace_push("load");
  std::vector<void*> weights;
  for (size_t mib : {512, 256, 256, 128}) weights.push_back(must_allocate(mib * kMiB, "weights"));
  std::vector<void*> optimizer_state;
  for (size_t mib : {512, 256, 256, 128}) {
    optimizer_state.push_back(must_allocate(2 * mib * kMiB, "optimizer state"));
  }
  int devices = 0;
  void* eval_weights = nullptr;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 1) {
    cudaSetDevice(1);
    eval_weights = must_allocate(1152 * kMiB, "evaluation copy of the weights");
    cudaSetDevice(0);
  }
  gpumemtrace_pop();

  // An oversized batch: the allocation fails, the program falls back to a smaller one.
  void* oversized = nullptr;
  if (cudaMalloc(&oversized, 64ull * 1024 * kMiB) == cudaSuccess) cudaFree(oversized);

  std::vector<void*> leaked_metrics;
  for (int step = 0; step < steps; ++step) {
    gpumemtrace_push("step");
    gpumemtrace_push("forward");
    std::vector<void*> activations;
    for (int layer = 0; layer < 8; ++layer)
      activations.push_back(must_allocate(64 * kMiB, "activations"));
    void* workspace =
        step == peak_step ? must_allocate(3072 * kMiB, "attention workspace") : nullptr;
    gpumemtrace_pop();
    gpumemtrace_push("backward");
    std::vector<void*> gradients;
    for (size_t mib : {512, 256, 256, 128})
      gradients.push_back(must_allocate(mib * kMiB, "gradients"));
    gpumemtrace_pop();

    gpumemtrace_push("optimizer");
    // The bug: a per-step metrics buffer that nothing ever frees.
    leaked_metrics.push_back(must_allocate(4 * kMiB, "metrics"));
    for (void* g : gradients) cudaFree(g);
    if (workspace != nullptr) cudaFree(workspace);
    for (void* a : activations) cudaFree(a);
    gpumemtrace_pop();

    if (eval_weights != nullptr && step % 5 == 4) {
      gpumemtrace_push("evaluate");
      cudaSetDevice(1);
      void* eval_batch = must_allocate(256 * kMiB, "evaluation batch");
      cudaFree(eval_batch);
      cudaSetDevice(0);
      gpumemtrace_pop();
    }
    gpumemtrace_pop();
    std::printf("step %d done\n", step);
  }

  if (eval_weights != nullptr) {
    cudaSetDevice(1);
    cudaFree(eval_weights);
    cudaSetDevice(0);
  }
  for (void* p : optimizer_state) cudaFree(p);
  for (void* p : weights) cudaFree(p);
  std::printf("training finished after %d steps\n", steps);
  return 0;
}
