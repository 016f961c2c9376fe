// SPDX-License-Identifier: Apache-2.0
// A stand-in for PyTorch's autograd engine, for tests/workloads/autograd/train.py: backward() on
// the calling thread allocates the root gradient (as torch.autograd's _make_grads does, with the
// caller's Python frames on the stack), then a native worker thread, which has no Python frames
// of its own (PyTorch's device threads), allocates the gradients through the simulated caching
// allocator, which reports them as PyTorch's does. Each call keeps `keep` of them, the leak.
// The worker also allocates a workspace of its own through cudaMalloc, never freed, as cuBLAS
// does on the thread that first runs a matmul's backward; with `fail`, it also asks for 1 PiB,
// which fails.
#include <cuda_runtime_api.h>

#include <thread>
#include <vector>

#include "tests/workloads/caching_allocator.h"

namespace {

constexpr std::size_t kGradientBytes = 1 << 20;
constexpr std::size_t kWorkspaceBytes = 256 << 10;
constexpr std::size_t kTooLargeBytes = std::size_t{1} << 50;
std::vector<void*> kept;

}  // namespace

extern "C" __attribute__((visibility("default"))) void* gmt_engine_new() {
  return new sim::CachingAllocator(0, sim::CachingAllocator::Reporting::kAsPytorch);
}

extern "C" __attribute__((visibility("default"))) void gmt_engine_backward(void* engine,
                                                                           int gradients, int keep,
                                                                           int fail) {
  auto& allocator = *static_cast<sim::CachingAllocator*>(engine);
  void* root = allocator.allocate(4);
  std::thread device_thread([&] {
    void* workspace = nullptr;
    if (cudaMalloc(&workspace, kWorkspaceBytes) != cudaSuccess) return;
    if (fail != 0) {  // a request no device can serve, which fails as an out-of-memory would
      void* too_large = nullptr;
      if (cudaMalloc(&too_large, kTooLargeBytes) == cudaSuccess) cudaFree(too_large);
    }
    for (int i = 0; i < gradients; ++i) {
      void* gradient = allocator.allocate(kGradientBytes);
      if (i < keep) {
        kept.push_back(gradient);
      } else {
        allocator.free(gradient);
      }
    }
  });
  device_thread.join();
  allocator.free(root);
}
