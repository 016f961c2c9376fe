// SPDX-License-Identifier: Apache-2.0
// One process of a simulated distributed job: what it does depends on its RANK (environment),
// as ranks of one training script do. Arguments:
//   leak=R     rank R also leaks 32 MiB (leak_on_one_rank)
//   oom=R      rank R asks for 1 TiB once, which fails (after its working set is freed); may be
//              given for several ranks
//   steps=N    N allocations and frees of 1 MiB at the end (to make traces of a given size)
// Every rank leaks 4 MiB in record_history and holds a working set of (RANK + 1) * 16 MiB for a
// while: its peak is 4 + (RANK + 1) * 16 MiB, plus 32 MiB on the leaking rank.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

namespace {

constexpr size_t kMiB = 1024 * 1024;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "job_rank: %s\n", what.c_str());
  std::exit(3);
}

__attribute__((noinline)) void* allocate(size_t bytes) {
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) die("cudaMalloc failed");
  return p;
}

}  // namespace

// Outside the anonymous namespace, so that reports name them plainly ("record_history()"); each
// calls cudaMalloc itself, so that it is in the stack (no tail call into a helper).
static __attribute__((noinline)) void record_history() {
  void* p = nullptr;  // never freed, on every rank
  if (cudaMalloc(&p, 4 * kMiB) != cudaSuccess) die("cudaMalloc failed");
}

static __attribute__((noinline)) void leak_on_one_rank() {
  void* p = nullptr;  // never freed
  if (cudaMalloc(&p, 32 * kMiB) != cudaSuccess) die("cudaMalloc failed");
}

static __attribute__((noinline)) void oversized_batch() {
  void* p = nullptr;
  if (cudaMalloc(&p, size_t{1} << 40) == cudaSuccess) die("1 TiB allocation succeeded");
}

namespace {

__attribute__((noinline)) void working_set(int rank) {
  void* p = allocate(static_cast<size_t>(rank + 1) * 16 * kMiB);
  if (cudaFree(p) != cudaSuccess) die("cudaFree failed");
}

__attribute__((noinline)) void steps(long count) {
  for (long i = 0; i < count; ++i) {
    void* p = allocate(kMiB);
    if (cudaFree(p) != cudaSuccess) die("cudaFree failed");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const char* rank_text = std::getenv("RANK");
  const int rank = rank_text != nullptr ? std::atoi(rank_text) : 0;
  int leak_rank = -1;
  std::set<int> oom_ranks;
  long step_count = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("leak=", 0) == 0) {
      leak_rank = std::atoi(arg.c_str() + 5);
    } else if (arg.rfind("oom=", 0) == 0) {
      oom_ranks.insert(std::atoi(arg.c_str() + 4));
    } else if (arg.rfind("steps=", 0) == 0) {
      step_count = std::atol(arg.c_str() + 6);
    } else {
      die("unknown argument " + arg);
    }
  }
  if (cudaSetDevice(0) != cudaSuccess) die("cudaSetDevice failed");
  record_history();
  if (rank == leak_rank) leak_on_one_rank();
  working_set(rank);
  if (oom_ranks.contains(rank)) oversized_batch();
  steps(step_count);
  return 0;
}
