// SPDX-License-Identifier: Apache-2.0
// The recorder alone: what the in-process side costs per event, without any driver under it.
//
// hook_overhead_bench times the hooks around the simulated driver, whose every allocation and
// free takes one process-wide mutex: with 4 and 16 threads its figures are mostly that lock's.
// Here the threads call the recorder's allocation and free entry points directly (what a hook
// calls after and before the real driver call), each on addresses of its own, with the sampler
// and the in-process high-water count on as in a traced program. What shared state the recorder
// has (the high-water count's shards and per-device totals, the trace file's chunk hand-out)
// shows as time per event growing with the threads. Wall time per event per thread is what a
// thread feels; on a machine with fewer cores than threads it includes waiting for a core, so
// the CPU time per event is reported too (a counter: cpu_ns_per_event).
//
//   recorder_bench [google-benchmark flags]     (GPUMEMTRACE_STACKS and _OUTPUT as for the
//                                                 preload; scripts/bench.sh sets them)
#include <benchmark/benchmark.h>
#include <dirent.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "format/api.h"
#include "format/memory_kind.h"
#include "format/records.h"
#include "interpose/config.h"
#include "interpose/record/event_recorder.h"
#include "interpose/record/phase_recorder.h"
#include "interpose/record/trace_writer.h"
#include "interpose/sampler/driver_views.h"
#include "interpose/sampler/sampler.h"

namespace {

using gmt::interpose::Config;

// A driver that answers the sampler at once: the views are not what is measured.
class StubDriverViews final : public gmt::interpose::DriverViews {
 public:
  std::string pci_bus_id(int device) override {
    return "0000:" + std::to_string(10 * (device + 1)) + ":00.0";
  }
  uint64_t total_bytes(int) override { return 16ull << 30; }
  void read(int, bool, bool, gmt::format::SampleRecord& sample) override {
    sample.driver_total = 16ull << 30;
    sample.driver_free = 4ull << 30;
    sample.present |=
        gmt::format::SampleField::kDriverFree | gmt::format::SampleField::kDriverTotal;
  }
  void lock_teardown() override {}
  void unlock_teardown() override {}
};

// As the runtime holds it: made once, never destroyed (the sampler registers an exit handler).
struct Recorder {
  Config config;
  gmt::interpose::TraceWriter* writer;
  StubDriverViews* views;
  gmt::interpose::Sampler* sampler;
  gmt::interpose::PhaseRecorder* phases;
  gmt::interpose::EventRecorder* events;

  Recorder() {
    config = Config::from_environment([](const std::string&) {});
    writer = new gmt::interpose::TraceWriter(config);
    views = new StubDriverViews;
    sampler = new gmt::interpose::Sampler(*writer, config, *views);
    phases = new gmt::interpose::PhaseRecorder(*writer);
    events = new gmt::interpose::EventRecorder(*writer, config, *sampler, *phases);
  }
};

Recorder& recorder() {
  static Recorder* r = new Recorder;
  return *r;
}

uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Events recorded by every run, for the checkpoint thread's CPU time per event.
std::atomic<uint64_t> events_recorded{0};

// The events this thread recorded since `cpu_start` (its CPU time then), as items processed and
// as CPU ns per event, which the library averages over the threads.
void count_events(benchmark::State& state, uint64_t events, uint64_t cpu_start) {
  events_recorded.fetch_add(events, std::memory_order_relaxed);
  state.SetItemsProcessed(static_cast<int64_t>(events));
  state.counters["cpu_ns_per_event"] = benchmark::Counter(
      static_cast<double>(thread_cpu_ns() - cpu_start) / static_cast<double>(events),
      benchmark::Counter::kAvgThreads);
}

// Every benchmark's allocations: 1 MiB of device memory in one context.
constexpr uint64_t kBytes = 1 << 20;

void allocate(gmt::interpose::EventRecorder& events, uint64_t address) {
  events.allocation(0, 0, 0x5500000000ull, gmt::format::MemoryKind::kDevice,
                    gmt::format::Api::kCuMemAlloc, address, kBytes);
}

// One iteration: an allocation of 1 MiB and its free, as a caching allocator's blocks come and
// go; each thread cycles through 64 addresses of its own.
void allocate_and_free(benchmark::State& state) {
  gmt::interpose::EventRecorder& events = *recorder().events;
  const uint64_t base = 0x7f0000000000ull + (static_cast<uint64_t>(state.thread_index()) << 32);
  uint64_t i = 0;
  const uint64_t cpu_start = thread_cpu_ns();
  for (auto _ : state) {
    const uint64_t address = base + (i++ & 63) * kBytes;
    allocate(events, address);
    events.freeing(gmt::format::Api::kCuMemFree, address);
  }
  count_events(state, 2 * state.iterations(), cpu_start);
}

BENCHMARK(allocate_and_free)->UseRealTime()->Threads(1)->Threads(2)->Threads(4)->Threads(16);

// One iteration: an allocation of 1 MiB, handed to the next thread, and the free of the one the
// previous thread handed over, as PyTorch's autograd threads allocate gradients that the main
// thread frees (with one thread, it frees its own). A thread whose last hand-over was not taken
// yet frees that one itself: each thread has at most one address out, of the 64 it cycles through.
constexpr int kMaxThreads = 16;
std::atomic<uint64_t> handed[kMaxThreads];

void allocate_here_free_there(benchmark::State& state) {
  gmt::interpose::EventRecorder& events = *recorder().events;
  const int me = state.thread_index();
  const int next = (me + 1) % state.threads();
  const uint64_t base = 0x7e0000000000ull + (static_cast<uint64_t>(me) << 32);
  uint64_t i = 0;
  uint64_t done = 0;
  const uint64_t cpu_start = thread_cpu_ns();
  for (auto _ : state) {
    const uint64_t address = base + (i++ & 63) * kBytes;
    allocate(events, address);
    ++done;
    if (const uint64_t theirs = handed[me].exchange(0, std::memory_order_acq_rel)) {
      events.freeing(gmt::format::Api::kCuMemFree, theirs);
      ++done;
    }
    if (const uint64_t mine = handed[next].exchange(address, std::memory_order_acq_rel)) {
      events.freeing(gmt::format::Api::kCuMemFree, mine);
      ++done;
    }
  }
  count_events(state, done, cpu_start);
}

BENCHMARK(allocate_here_free_there)->UseRealTime()->Threads(1)->Threads(4)->Threads(16);

// A bounded trace's live set is folded by a thread of the recorder's own (gmt-checkpoint),
// not by the threads measured: its CPU time, from the kernel's schedstat, over every event.
void report_fold_thread() {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return;
  uint64_t fold_ns = 0;
  bool found = false;
  while (const dirent* e = readdir(tasks)) {
    const std::string task = std::string("/proc/self/task/") + e->d_name;
    std::string comm;
    std::getline(std::ifstream(task + "/comm"), comm);
    if (comm != "gmt-checkpoint") continue;
    uint64_t ns = 0;
    if (std::ifstream(task + "/schedstat") >> ns) {
      fold_ns += ns;
      found = true;
    }
  }
  closedir(tasks);
  if (!found) return;
  const uint64_t events = events_recorded.load();
  std::fprintf(stderr,
               "recorder_bench: checkpoint thread CPU %.1f ms over %llu events: %.1f ns per "
               "event\n",
               static_cast<double>(fold_ns) / 1e6, static_cast<unsigned long long>(events),
               events != 0 ? static_cast<double>(fold_ns) / static_cast<double>(events) : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  const char* stacks = std::getenv("GPUMEMTRACE_STACKS");
  benchmark::AddCustomContext("gpumemtrace_stacks", stacks != nullptr ? stacks : "all");
  recorder();
  benchmark::RunSpecifiedBenchmarks();
  report_fold_thread();
  benchmark::Shutdown();
  return 0;
}
