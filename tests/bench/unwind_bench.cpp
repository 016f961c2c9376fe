// SPDX-License-Identifier: Apache-2.0
// Our stack walker against libunwind's unw_backtrace, side by side in one run: the same stack,
// `depth` calls below the benchmark, unwound to the thread's first frame, again and again (the
// walker's remembered path; `walked` counts its full walks). Warm caches only: on this VM a
// cache evicted between unwinds costs more, and varies more, than an unwind.
//
//   unwind_bench [google-benchmark flags]      (scripts/bench.sh runs it)
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdint>

#include "interpose/stacks/stack_walker.h"
#include "tests/bench/call_depth.h"

namespace {

using Backtrace = int (*)(void**, int);

Backtrace unw_backtrace_fn() {
  static Backtrace fn = [] {
    void* lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    return lib != nullptr ? reinterpret_cast<Backtrace>(dlsym(lib, "unw_backtrace")) : nullptr;
  }();
  return fn;
}

struct Unwind {
  gmt::interpose::StackWalker* walker = nullptr;  // null: libunwind
  int frames = 0;
};

void unwind_here(void* arg) {
  auto* u = static_cast<Unwind*>(arg);
  if (u->walker != nullptr) {
    uint64_t frames[256];
    u->frames = u->walker->walk(frames, 256, nullptr);
  } else {
    void* frames[256];
    u->frames = unw_backtrace_fn()(frames, 256);
  }
  benchmark::ClobberMemory();
}

void run(benchmark::State& state, gmt::interpose::StackWalker* walker) {
  if (walker == nullptr && unw_backtrace_fn() == nullptr) {
    state.SkipWithError("libunwind.so.8 is not installed");
    return;
  }
  Unwind u{walker};
  for (auto _ : state) gmt::bench::call_at_depth(static_cast<int>(state.range(0)), unwind_here, &u);
  state.counters["frames"] = u.frames;
  if (walker != nullptr) {
    const auto counts = walker->thread_counts();
    state.counters["walked"] = static_cast<double>(counts.walked);
    state.counters["given_up"] = static_cast<double>(counts.given_up);
  }
}

void walker(benchmark::State& state) {
  static gmt::interpose::StackWalker* w = new gmt::interpose::StackWalker;
  run(state, w);
}

void libunwind(benchmark::State& state) {
  run(state, nullptr);
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgName("depth")->Arg(8)->Arg(32)->Arg(128);
}

BENCHMARK(walker)->Apply(shapes);
BENCHMARK(libunwind)->Apply(shapes);

}  // namespace

BENCHMARK_MAIN();
