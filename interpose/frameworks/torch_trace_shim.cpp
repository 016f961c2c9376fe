// SPDX-License-Identifier: Apache-2.0
// Built in the traced process's environment against the headers of the torch that runs (the
// layout of TraceEntry changes between versions), by torch_tracker.cpp, which embeds this file.
// Not part of the project's own build.
//
// It hands each of the CUDA caching allocator's trace entries to gpumemtrace_framework_block on
// the thread that caused it. The callback runs with the allocator's lock held and maybe the GIL
// held by its caller: it never takes the GIL, never calls into PyTorch, and never throws.
#include <c10/cuda/CUDACachingAllocator.h>
#if __has_include(<c10/cuda/CUDAAllocatorConfig.h>)
#include <c10/cuda/CUDAAllocatorConfig.h>
#endif
#if __has_include(<c10/core/AllocatorConfig.h>)
#include <c10/core/AllocatorConfig.h>
#endif
#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <type_traits>

// Where the allocator's settings are read from moved between torch versions: CUDA's own config
// class, then (2.9 on) the accelerators' shared one, with CUDA's kept as a deprecated front. Each
// name is looked up inside its namespace, where torch declares it if this torch has it; where it
// does not, lookup goes on outwards to these empty stand-ins, which have no getters. So the shim
// builds against every torch, and reads the settings from whichever class has them.
struct AcceleratorAllocatorConfig {};
struct CUDAAllocatorConfig {};
namespace c10::CachingAllocator {
using GmtAcceleratorConfig = AcceleratorAllocatorConfig;
}
namespace c10::cuda::CUDACachingAllocator {
using GmtCudaConfig = CUDAAllocatorConfig;
}

namespace {

using BlockFn = void (*)(uint32_t, uint32_t, int32_t, uint64_t, uint64_t, uint64_t);
using c10::cuda::CUDACachingAllocator::TraceEntry;

BlockFn block_fn = nullptr;

// The actions of include/gpumemtrace.h; -1 for the entries that are not block events.
int action_of(TraceEntry::Action action) {
  switch (action) {
    case TraceEntry::ALLOC:
      return 0;
    case TraceEntry::FREE_REQUESTED:
      return 1;
    case TraceEntry::FREE_COMPLETED:
      return 2;
    case TraceEntry::SEGMENT_ALLOC:
      return 3;
    case TraceEntry::SEGMENT_FREE:
      return 4;
    case TraceEntry::SEGMENT_MAP:
      return 5;
    case TraceEntry::SEGMENT_UNMAP:
      return 6;
    case TraceEntry::OOM:
      return 7;
    default:
      return -1;
  }
}

void on_trace_entry(const TraceEntry& entry) {
  const int action = action_of(entry.action_);
  if (action < 0) return;
  block_fn(/*PyTorch*/ 1, static_cast<uint32_t>(action), static_cast<int32_t>(entry.device_),
           static_cast<uint64_t>(entry.addr_), static_cast<uint64_t>(entry.size_),
           static_cast<uint64_t>(reinterpret_cast<uintptr_t>(entry.stream_)));
}

// A config class's static getters, where it has them.
template <class C, class = void>
struct HasSettings : std::false_type {};
template <class C>
struct HasSettings<C, std::void_t<decltype(C::max_split_size()),
                                  decltype(C::roundup_power2_divisions(std::size_t{1}))>>
    : std::true_type {};

template <class C>
int read_settings(uint64_t* max_split_size, uint64_t* divisions, int intervals) {
  if constexpr (HasSettings<C>::value) {
    *max_split_size = static_cast<uint64_t>(C::max_split_size());
    // One request size per interval: 1 MiB << i is in interval i (the first also holds what is
    // below it, the last what is above it).
    for (int i = 0; i < intervals; ++i)
      divisions[i] = static_cast<uint64_t>(C::roundup_power2_divisions(std::size_t{1} << (20 + i)));
    return 1;
  } else {
    return 0;
  }
}

}  // namespace

// The settings that shape the blocks (format's AllocatorSettingsRecord), as the allocator reads
// them: 1 when read, 0 when this torch has no getters this shim knows.
extern "C" __attribute__((visibility("default"))) int gpumemtrace_torch_settings(
    uint64_t* max_split_size, uint64_t* divisions, int intervals) {
  try {
    if (read_settings<c10::CachingAllocator::GmtAcceleratorConfig>(max_split_size, divisions,
                                                                   intervals))
      return 1;
    return read_settings<c10::cuda::CUDACachingAllocator::GmtCudaConfig>(max_split_size, divisions,
                                                                         intervals);
  } catch (...) {
    return 0;
  }
}

// 1: attached; 0: the allocator is not initialized yet (ask again at the next allocation);
// -1: this allocator cannot be traced (e.g. backend:cudaMallocAsync), or no entry point.
extern "C" __attribute__((visibility("default"))) int gpumemtrace_torch_attach() {
  try {
    if (block_fn == nullptr) {
      block_fn = reinterpret_cast<BlockFn>(dlsym(RTLD_DEFAULT, "gpumemtrace_framework_block"));
      if (block_fn == nullptr) return -1;
    }
    auto* allocator = c10::cuda::CUDACachingAllocator::get();
    if (allocator == nullptr || !allocator->initialized()) return 0;
    c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker(&on_trace_entry);
    return 1;
  } catch (...) {
    return -1;
  }
}

// Which allocator runs: "native" or "cudaMallocAsync" (for the note when it cannot be traced).
extern "C" __attribute__((visibility("default"))) const char* gpumemtrace_torch_backend() {
  try {
    auto* allocator = c10::cuda::CUDACachingAllocator::get();
    if (allocator == nullptr) return "none";
    static const std::string name = allocator->name();
    return name.c_str();
  } catch (...) {
    return "unknown";
  }
}
