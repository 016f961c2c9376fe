// SPDX-License-Identifier: Apache-2.0
// The driver allocations' generator (driver_generator.h): its loop, and each kind of event it
// writes.
#include "tests/bench/synthetic_trace/driver_generator.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>

#include "format/records.h"

namespace gmt::bench {

using gmt::format::Api;
using gmt::format::MemoryKind;

namespace {

// Size classes of a caching allocator's blocks, from small scratch buffers to large weights,
// weighted toward the small ones.
constexpr std::array<uint64_t, 12> kSizeClasses = {512,       4096,      16384,      65536,
                                                   262144,    1u << 20,  2u << 20,   8u << 20,
                                                   20u << 20, 64u << 20, 128u << 20, 512u << 20};
constexpr std::array<uint32_t, 12> kSizeWeights = {30, 25, 15, 10, 8, 5, 3, 2, 1, 1, 0, 0};

}  // namespace

Generator::Generator(const Options& o) : o_(o), rng_(o.seed), file_(o.output, o.chunk_size) {
  writers_.reserve(o.threads + 1);
  for (uint32_t t = 0; t < o.threads; ++t) {
    const std::string name = t == 0 ? "python" : "pt_worker_" + std::to_string(t);
    writers_.emplace_back(file_, t, 4000 + t, name);
  }
  // The sampler is a thread of its own in the recorder too.
  writers_.emplace_back(file_, o.threads, 4000 + o.threads, "gpumemtrace-smp");
  free_lists_.resize(static_cast<std::size_t>(o.devices) * kSizeClasses.size());
  next_address_.resize(static_cast<std::size_t>(o.devices));
  for (int d = 0; d < o.devices; ++d) {
    next_address_[static_cast<std::size_t>(d)] =
        0x7f0000000000ull + (static_cast<uint64_t>(d) << 38);
  }
  stack_defined_.assign(o.stacks + 1, false);
  for (uint32_t w : kSizeWeights) weight_total_ += w;
}

void Generator::run() {
  prologue();
  constexpr uint64_t kSampleEvery = 20'000;
  uint64_t next_sample = 0;
  constexpr uint64_t kPhaseEvery = 10'000;  // a training step, as an NVTX range
  uint64_t next_phase = 0;
  while (events_ < o_.events) {
    advance_clock();
    if (events_ >= next_sample) {
      sample();
      next_sample += kSampleEvery;
    }
    if (events_ >= next_phase) {
      phase();
      next_phase += kPhaseEvery;
    }
    if (rng_.one_in(o_.fail_one_in)) {
      failed_allocation();
    } else if (rng_.one_in(o_.vmm_one_in)) {
      vmm_step();
    } else if (wants_alloc()) {
      allocate();
    } else {
      free_one();
    }
  }
  epilogue();
  for (Writer& w : writers_) w.flush();
}

Writer& Generator::stamp(Writer& w) {
  w.time_ns = now_;
  return w;
}

void Generator::prologue() {
  Writer& main = stamp(writers_[0]);
  write_process(main, now_, {"python", "train.py", "--synthetic"});
  gmt::format::NameRecord step;
  step.time_ns = now_;
  step.id = 1;
  step.text = "train_step";
  main.record(step);
  gmt::format::NoteRecord note;
  note.time_ns = now_;
  note.text = "synthetic trace: no real process ran";
  main.record(note);
  for (int d = 0; d < o_.devices; ++d) {
    gmt::format::ContextRecord context;
    context.time_ns = now_;
    context.id = static_cast<uint32_t>(d) + 1;
    context.handle = 0x5500000000ull + static_cast<uint64_t>(d) * 0x1000;
    context.device = d;
    main.record(context);
    gmt::format::DeviceRecord device;
    device.time_ns = now_;
    device.device = d;
    device.pci_bus_id = "0000:1" + std::to_string(d) + ":00.0";
    device.nvml_index = d;
    device.name = "NVIDIA H200";
    device.total_bytes = 143'771'000'832ull;
    stamp(sampler()).record(device);
  }
}

// Ends the process normally; a few exit-time frees follow the End record, as they do when a
// framework frees its cache from a static destructor.
void Generator::epilogue() {
  advance_clock();
  gmt::format::EndRecord end;
  end.time_ns = now_;
  stamp(writers_[0]).record(end);
  for (int i = 0; i < 10 && !live_.empty(); ++i) {
    advance_clock();
    free_one();
  }
  // The last release of each primary context takes what is still allocated in it.
  for (int d = 0; d < o_.devices; ++d) {
    advance_clock();
    gmt::format::ContextDestroyedRecord destroyed;
    destroyed.time_ns = now_;
    destroyed.id = static_cast<uint32_t>(d) + 1;
    destroyed.api = Api::kCuDevicePrimaryCtxRelease;
    stamp(writers_[0]).record(destroyed);
    ++events_;
  }
}

// Training steps as NVTX ranges on the main thread: one closes and the next opens.
void Generator::phase() {
  Writer& main = stamp(writers_[0]);
  gmt::format::PhaseRecord p;
  p.time_ns = now_;
  p.tid = main.tid();
  if (phase_open_) {
    p.action = static_cast<uint32_t>(gmt::format::PhaseAction::kPop);
    main.record(p);
  }
  p.action = static_cast<uint32_t>(gmt::format::PhaseAction::kPush);
  p.name = 1;
  main.record(p);
  phase_open_ = true;
}

bool Generator::wants_alloc() {
  // Ramp up, then hover around the live set: the further below it, the likelier an allocation.
  if (live_.size() < o_.live / 2) return true;
  if (live_.empty()) return true;
  const uint64_t target = o_.live;
  const uint64_t p = live_.size() >= 2 * target ? 0 : (2 * target - live_.size()) * 500 / target;
  return rng_.below(1000) < p;  // 50 % at exactly the live set
}

uint8_t Generator::pick_size_class() {
  uint64_t r = rng_.below(weight_total_);
  for (std::size_t c = 0; c < kSizeWeights.size(); ++c) {
    if (r < kSizeWeights[c]) return static_cast<uint8_t>(c);
    r -= kSizeWeights[c];
  }
  return 0;
}

// Stacks follow a skewed popularity, as real call sites do: a few hot ones, a long tail.
uint32_t Generator::pick_stack(Writer& w) {
  const uint64_t a = rng_.below(o_.stacks), b = rng_.below(o_.stacks);
  const auto id = static_cast<uint32_t>(std::min(a, b) + 1);
  if (!stack_defined_[id]) {
    stack_defined_[id] = true;
    gmt::format::StackRecord stack;
    stack.time_ns = now_;
    stack.id = id;
    Rng frames(o_.seed * 7919 + id);
    const std::size_t depth = 16 + frames.below(24);
    for (std::size_t f = 0; f < depth; ++f) {
      const uint64_t module = f < 2 ? 1 + f : 3 + frames.below(5);
      stack.frames.push_back(0x7e0000000000ull + (module << 32) + 0x1000 + frames.below(48u << 20));
    }
    w.record(stack);
  }
  return id;
}

void Generator::allocate() {
  Writer& w = stamp(thread());
  const int device = static_cast<int>(rng_.below(static_cast<uint64_t>(o_.devices)));
  const uint8_t c = pick_size_class();
  auto& free_list = free_lists_[static_cast<std::size_t>(device) * kSizeClasses.size() + c];
  uint64_t address;
  if (!free_list.empty() && !rng_.one_in(20)) {
    address = free_list.back();  // a caching allocator hands back its most recent block
    free_list.pop_back();
  } else {
    address = next_address_[static_cast<std::size_t>(device)];
    next_address_[static_cast<std::size_t>(device)] += kSizeClasses[c];
  }
  gmt::format::AllocRecord a;
  a.time_ns = now_;
  a.device = device;
  const bool async = rng_.one_in(4);
  a.kind = async ? MemoryKind::kStreamOrdered : MemoryKind::kDevice;
  a.api = async ? Api::kCuMemAllocAsync : Api::kCudaMalloc;
  a.address = address;
  a.size = kSizeClasses[c] - (c > 2 ? 0 : rng_.below(256));
  a.context = static_cast<uint32_t>(device) + 1;
  a.stack = pick_stack(w);
  w.record(a);
  live_.push_back(Live{address, device, c});
  ++events_;
}

void Generator::free_one() {
  if (live_.empty()) return;
  Writer& w = stamp(thread());
  const std::size_t i = rng_.below(live_.size());
  const Live l = live_[i];
  live_[i] = live_.back();
  live_.pop_back();
  gmt::format::FreeRecord f;
  f.time_ns = now_;
  f.api = Api::kCudaFree;
  f.address = l.address;
  w.record(f);
  free_lists_[static_cast<std::size_t>(l.device) * kSizeClasses.size() + l.size_class].push_back(
      l.address);
  ++events_;
}

void Generator::failed_allocation() {
  Writer& w = stamp(thread());
  gmt::format::AllocFailedRecord f;
  f.time_ns = now_;
  f.device = static_cast<int>(rng_.below(static_cast<uint64_t>(o_.devices)));
  f.kind = MemoryKind::kDevice;
  f.api = Api::kCudaMalloc;
  f.size = 200ull << 30;
  f.error = 2;  // CUDA_ERROR_OUT_OF_MEMORY
  f.stack = pick_stack(w);
  w.record(f);
  ++events_;
}

// cuMemAddressReserve + cuMemCreate + cuMemMap, and later the reverse, as expandable segments
// and NCCL do; at most a handful are live.
void Generator::vmm_step() {
  Writer& w = stamp(thread());
  if (vmm_.size() >= 8 || (!vmm_.empty() && rng_.one_in(2))) {
    const VmmBlock b = vmm_.front();
    vmm_.pop_front();
    gmt::format::UnmapRecord unmap;
    unmap.time_ns = now_;
    unmap.address = b.reservation;
    unmap.size = b.size;
    w.record(unmap);
    gmt::format::FreeRecord release;
    release.time_ns = now_;
    release.api = Api::kCuMemRelease;
    release.address = b.handle;
    w.record(release);
    gmt::format::FreeRecord address_free;
    address_free.time_ns = now_;
    address_free.api = Api::kCuMemAddressFree;
    address_free.address = b.reservation;
    w.record(address_free);
    events_ += 3;
    return;
  }
  VmmBlock b;
  b.device = static_cast<int>(rng_.below(static_cast<uint64_t>(o_.devices)));
  b.size = 2ull << 20;
  b.reservation = 0x7d0000000000ull + (++vmm_serial_ << 24);
  b.handle = 0x100000 + vmm_serial_;
  const uint32_t stack = pick_stack(w);
  gmt::format::AllocRecord reserve;
  reserve.time_ns = now_;
  reserve.device = -1;
  reserve.kind = MemoryKind::kVmmReservation;
  reserve.api = Api::kCuMemAddressReserve;
  reserve.address = b.reservation;
  reserve.size = b.size;
  reserve.stack = stack;
  w.record(reserve);
  gmt::format::AllocRecord create;
  create.time_ns = now_;
  create.device = b.device;
  create.kind = MemoryKind::kVmmPhysical;
  create.api = Api::kCuMemCreate;
  create.address = b.handle;
  create.size = b.size;
  create.context = static_cast<uint32_t>(b.device) + 1;
  create.stack = stack;
  w.record(create);
  gmt::format::MapRecord map;
  map.time_ns = now_;
  map.device = b.device;
  map.address = b.reservation;
  map.size = b.size;
  map.handle = b.handle;
  w.record(map);
  vmm_.push_back(b);
  events_ += 3;
}

// The sampler's periodic look at every device: driver and NVML views near the tracked bytes.
void Generator::sample() {
  Writer& w = stamp(sampler());
  for (int d = 0; d < o_.devices; ++d) {
    gmt::format::SampleRecord s;
    s.time_ns = now_;
    s.device = d;
    s.reason = static_cast<uint32_t>(gmt::format::SampleReason::kPeriodic);
    s.present = gmt::format::kNvmlDeviceUsed | gmt::format::kNvmlDeviceTotal |
                gmt::format::kDriverFree | gmt::format::kDriverTotal;
    s.read_ns = 20'000;
    s.nvml_device_total = s.driver_total = 143'771'000'832ull;
    s.nvml_device_used = (8ull << 30) + rng_.below(1ull << 30);
    s.driver_free = s.driver_total - s.nvml_device_used;
    w.record(s);
  }
}

}  // namespace gmt::bench
