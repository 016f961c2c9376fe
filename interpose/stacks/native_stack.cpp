// SPDX-License-Identifier: Apache-2.0
#include "interpose/stacks/native_stack.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>

#include "interpose/common/diagnostic.h"
#include "interpose/common/real_dlsym.h"

namespace gmt::interpose {
namespace {

struct RangeSearch {
  uint64_t address;
  uint64_t start = 0;
  uint64_t end = 0;
};

int find_module_range(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<RangeSearch*>(data);
  uint64_t start = UINT64_MAX, end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    start = std::min<uint64_t>(start, info->dlpi_addr + ph.p_vaddr);
    end = std::max<uint64_t>(end, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  if (search->address >= start && search->address < end) {
    search->start = start;
    search->end = end;
    return 1;
  }
  return 0;
}

}  // namespace

void NativeStack::find_own_range() {
  RangeSearch search{reinterpret_cast<uint64_t>(&find_module_range)};
  dl_iterate_phdr(find_module_range, &search);
  own_start_ = search.start;
  own_end_ = search.end;
}

// Loading happens once, without holding any lock across the loader: a thread that finds
// another one loading records this event without a stack rather than wait.
NativeStack::Backtrace NativeStack::load() {
  int expected = 0;
  if (!state_.compare_exchange_strong(expected, 1))
    return backtrace_.load(std::memory_order_acquire);
  find_own_range();
  Backtrace fn = nullptr;
  if (void* libunwind = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL)) {
    fn = reinterpret_cast<Backtrace>(real_dlsym()(libunwind, "unw_backtrace"));
  }
  if (fn == nullptr) {
    print_diagnostic(
        "libunwind (libunwind.so.8) is not available: allocations are recorded without native "
        "stacks");
  }
  backtrace_.store(fn, std::memory_order_release);
  state_.store(fn != nullptr ? 2 : 3, std::memory_order_release);
  return fn;
}

int NativeStack::capture(uint64_t* frames, int max) {
  Backtrace fn = backtrace_.load(std::memory_order_acquire);
  if (fn == nullptr && (state_.load(std::memory_order_acquire) != 0 || (fn = load()) == nullptr))
    return 0;
  // Room for our own frames (the hook, the recorder, this function), which are dropped.
  constexpr int kOwnFrames = 8;
  void* raw[256 + kOwnFrames];
  const int n = fn(raw, std::min(max + kOwnFrames, static_cast<int>(sizeof raw / sizeof raw[0])));
  int skip = 0;
  while (skip < n) {
    const auto a = reinterpret_cast<uint64_t>(raw[skip]);
    if (a < own_start_ || a >= own_end_) break;
    ++skip;
  }
  const int kept = std::min(n - skip, max);
  for (int i = 0; i < kept; ++i) frames[i] = reinterpret_cast<uint64_t>(raw[skip + i]);
  return kept;
}

}  // namespace gmt::interpose
