// SPDX-License-Identifier: Apache-2.0
// A long run for bounded traces: memory held from the start, a churn of allocations and frees
// that writes most of the trace, a leak that grows all along, and a spike near the end. Its live
// memory is known at every moment, so a bounded trace's report can be checked against an
// unbounded one's.
//
//   workload_bounded_history ITERATIONS [vmm | threads [N [LEAK_EVERY]] | phases | fork]
//
// With `vmm`, it also holds 48 MiB of VMM memory from the start to the end: 32 MiB mapped and
// released at once (as NCCL does: the mapping keeps the memory), and 16 MiB mapped and retained
// (cuMemRetainAllocationHandle: two references, never released).
// With `threads`, N threads (4 unless given) share the iterations (each its own churn and leaks,
// a leak every LEAK_EVERY iterations, 10000 unless given; no spike), and every 100 iterations
// each hands a 8 KiB buffer to whichever thread frees it next; the last one handed is freed
// before the end.
// With `phases`, the whole run is inside a phase "training" (gpumemtrace.h), opened before any
// allocation, and the spike inside a phase "spike" within it.
// With `fork`, halfway through it forks a child that runs ITERATIONS / 2 iterations of churn of
// its own, with a leak every 10000, and exits; the parent goes on, then waits for it.
// Prints "done" after the last iteration.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "include/gpumemtrace.h"

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

void must(CUresult result, const char* call) {
  if (result != CUDA_SUCCESS) {
    std::fprintf(stderr, "%s failed: %d\n", call, static_cast<int>(result));
    std::exit(3);
  }
}

struct Mapped {
  CUmemGenericAllocationHandle handle = 0;
  CUdeviceptr va = 0;
};

// `bytes` of physical memory mapped at a reservation of its own.
Mapped mapped(size_t bytes) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  Mapped m;
  must(cuMemCreate(&m.handle, bytes, &prop, 0), "cuMemCreate");
  must(cuMemAddressReserve(&m.va, bytes, 0, 0, 0), "cuMemAddressReserve");
  must(cuMemMap(m.va, bytes, 0, m.handle, 0), "cuMemMap");
  CUmemAccessDesc access{{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  must(cuMemSetAccess(m.va, bytes, &access, 1), "cuMemSetAccess");
  return m;
}

__attribute__((noinline)) void vmm_buffers() {
  must(cuMemRelease(mapped(32u << 20).handle), "cuMemRelease");
  const Mapped m = mapped(16u << 20);
  CUmemGenericAllocationHandle retained = 0;
  must(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(m.va)),
       "cuMemRetainAllocationHandle");
}

__attribute__((noinline)) void* handed_buffer() {
  return allocate(8192);
}

// Each of `threads` threads runs `iterations` of churn, with a leak every `leak_every`; every
// 100 it puts a new buffer in `handed` and frees the one it takes out, most often another
// thread's.
void churn_on_threads(int threads, long iterations, long leak_every) {
  std::atomic<void*> handed{nullptr};
  std::vector<std::thread> workers;
  std::vector<std::vector<void*>> leaked(threads);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (long i = 0; i < iterations; ++i) {
        churn(i);
        if (i % leak_every == 0) leaked[t].push_back(leaked_buffer());
        if (i % 100 == 0) {
          if (void* old = handed.exchange(handed_buffer())) cudaFree(old);
        }
      }
    });
  }
  for (std::thread& w : workers) w.join();
  cudaFree(handed.exchange(nullptr));
}

}  // namespace

int main(int argc, char** argv) {
  const bool vmm = argc == 3 && std::strcmp(argv[2], "vmm") == 0;
  const bool threads = argc >= 3 && argc <= 5 && std::strcmp(argv[2], "threads") == 0;
  const int thread_count = threads && argc >= 4 ? std::atoi(argv[3]) : 4;
  const long leak_every = threads && argc == 5 ? std::atol(argv[4]) : 10000;
  const bool phases = argc == 3 && std::strcmp(argv[2], "phases") == 0;
  const bool forks = argc == 3 && std::strcmp(argv[2], "fork") == 0;
  if ((argc != 2 && !vmm && !threads && !phases && !forks) || thread_count < 1 || leak_every < 1) {
    std::fprintf(stderr,
                 "usage: workload_bounded_history ITERATIONS [vmm | threads [N [LEAK_EVERY]] | "
                 "phases | fork]\n");
    return 2;
  }
  if (phases) gpumemtrace_push("training");
  const long iterations = std::atol(argv[1]);
  std::vector<void*> held;
  for (int i = 0; i < 8; ++i) held.push_back(held_buffer());
  if (threads) {
    churn_on_threads(thread_count, iterations / thread_count, leak_every);
    std::printf("done\n");
    return 0;
  }
  if (vmm) vmm_buffers();
  std::vector<void*> leaked;
  pid_t child = 0;
  for (long i = 0; i < iterations; ++i) {
    if (forks && i == iterations / 2) {
      std::fflush(stdout);
      child = fork();
      if (child < 0) return 3;
      if (child == 0) {
        for (long j = 0; j < iterations / 2; ++j) {
          churn(j);
          if (j % 10000 == 0) leaked.push_back(leaked_buffer());
        }
        std::printf("child=%d done\n", static_cast<int>(getpid()));
        std::exit(0);
      }
    }
    churn(i);
    if (i % 10000 == 0) leaked.push_back(leaked_buffer());
    if (i == iterations - 1000) {
      if (phases) gpumemtrace_push("spike");
      spike();
      if (phases) gpumemtrace_pop();
    }
  }
  if (child > 0) {
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      return 4;
  }
  std::printf("done\n");
  return 0;
}
