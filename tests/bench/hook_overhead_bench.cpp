// SPDX-License-Identifier: Apache-2.0
// Hook overhead: the time gpumemtrace adds to an allocation and a free through the driver entry
// points. The same loop runs the driver's functions (untraced) and our wrappers (traced) in one
// process, with 1, 4 and 16 threads, called directly from the loop and from 32 calls deeper (so
// that a native stack has at least 32 frames). A third variant, the driver's functions plus the
// two context queries the wrappers make per allocation, splits the added time into what the
// hook does and what those queries cost on this driver. The stack mode is whatever
// GPUMEMTRACE_STACKS says: the library reads its environment once, so scripts/bench.sh runs this
// once per mode and turns the pairs of figures into added nanoseconds per event
// (docs/benchmarks.md).
#include <benchmark/benchmark.h>
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "tests/bench/call_depth.h"
#include "tests/bench/device_context.h"
#include "tests/bench/driver_functions.h"

namespace {

using gmt::bench::AllocFree;

// What a caching allocator asks the driver for: blocks of a few MiB, freed and asked again.
constexpr std::size_t kBytes = 1 << 20;
constexpr int kDeepStack = 32;

struct PairState {
  AllocFree fns;
  bool failed = false;
};

// One iteration: two events, an allocation and its free.
void alloc_free_pair(void* arg) {
  auto* pair = static_cast<PairState*>(arg);
  CUdeviceptr ptr = 0;
  if (pair->fns.alloc(&ptr, kBytes) != CUDA_SUCCESS || pair->fns.free(ptr) != CUDA_SUCCESS) {
    pair->failed = true;
  }
}

void alloc_free_pairs(benchmark::State& state, AllocFree fns, int depth) {
  if (!gmt::bench::make_primary_context_current()) {
    state.SkipWithError("no CUDA context: cuInit or cuDevicePrimaryCtxRetain failed");
    return;
  }
  PairState pair{fns};
  // Untimed first pair: a thread's first event maps its trace chunk (and the first one in the
  // process creates the file), which is start-up cost, not per-event cost.
  gmt::bench::call_at_depth(depth, alloc_free_pair, &pair);
  for (auto _ : state) {
    gmt::bench::call_at_depth(depth, alloc_free_pair, &pair);
  }
  if (pair.failed) state.SkipWithError("cuMemAlloc_v2 or cuMemFree_v2 failed");
  state.SetItemsProcessed(state.iterations() * 2);  // items = events
}

// Registered at run time: the functions come from libraries opened by main().
void register_pairs(const char* name, AllocFree fns, int depth) {
  benchmark::RegisterBenchmark(name, alloc_free_pairs, fns, depth)
      ->Threads(1)
      ->Threads(4)
      ->Threads(16)
      ->UseRealTime();  // with threads, CPU time of the main thread alone says nothing
}

const char* env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  std::string preload = GMT_PRELOAD;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--preload=", 0) == 0) {
      preload = arg.substr(10);
    } else {
      std::fprintf(stderr, "hook_overhead_bench: unknown argument '%s' (--preload=PATH)\n",
                   argv[i]);
      return 2;
    }
  }
  AllocFree untraced, queries, traced;
  try {
    untraced = gmt::bench::driver_functions();
    queries = gmt::bench::driver_functions_with_context_queries();
    traced = gmt::bench::traced_functions(preload);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hook_overhead_bench: %s\n", e.what());
    return 1;
  }
  // In the JSON output, so that a file of figures says which mode produced it.
  benchmark::AddCustomContext("gpumemtrace_stacks", env_or("GPUMEMTRACE_STACKS", "native"));
  benchmark::AddCustomContext("gpumemtrace_stack_depth",
                              env_or("GPUMEMTRACE_STACK_DEPTH", "default"));
  benchmark::AddCustomContext("gpumemtrace_preload", preload);

  // Untraced and traced of each shape next to each other, so that they run close in time.
  register_pairs("untraced/depth:0", untraced, 0);
  register_pairs("queries/depth:0", queries, 0);
  register_pairs("traced/depth:0", traced, 0);
  register_pairs("untraced/depth:32", untraced, kDeepStack);
  register_pairs("traced/depth:32", traced, kDeepStack);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
