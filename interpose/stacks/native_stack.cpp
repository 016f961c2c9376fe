// SPDX-License-Identifier: Apache-2.0
#include "interpose/stacks/native_stack.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <string_view>
#include <utility>

#include "interpose/common/diagnostic.h"
#include "interpose/common/real_dlsym.h"

namespace gmt::interpose {
namespace {

// The addresses a loaded module spans: from its first loadable segment to its last.
std::pair<uint64_t, uint64_t> loaded_extent(const dl_phdr_info* info) {
  uint64_t start = UINT64_MAX, end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    start = std::min<uint64_t>(start, info->dlpi_addr + ph.p_vaddr);
    end = std::max<uint64_t>(end, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  return {start, end};
}

struct RangeSearch {
  uint64_t address;
  uint64_t start = 0;
  uint64_t end = 0;
};

int find_module_range(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<RangeSearch*>(data);
  const auto [start, end] = loaded_extent(info);
  if (search->address >= start && search->address < end) {
    search->start = start;
    search->end = end;
    return 1;
  }
  return 0;
}

// The interpreter's modules, by the name the analyzer knows them by (analyzer/report/
// stack_frames.cpp): libpython*, or python* for an executable with the interpreter linked in.
bool interpreter_name(std::string_view path) {
  const std::string_view name = path.substr(path.find_last_of('/') + 1);
  return name.starts_with("libpython") || name.starts_with("python");
}

struct InterpreterSearch {
  std::string_view executable;
  std::array<std::pair<uint64_t, uint64_t>, 2> extents{};
  int found = 0;
};

int find_interpreter_modules(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<InterpreterSearch*>(data);
  // The executable comes first, with an empty name.
  const std::string_view path = info->dlpi_name != nullptr && info->dlpi_name[0] != '\0'
                                    ? info->dlpi_name
                                    : search->executable;
  if (!interpreter_name(path) || search->found == 2) return 0;
  const auto extent = loaded_extent(info);
  if (extent.second > extent.first) search->extents[search->found++] = extent;
  return 0;
}

// How many frames past the interpreter's first frame a thread unwinds next time: other calls
// of the thread reach the interpreter a few frames deeper.
constexpr int kHintMargin = 4;
// The depth a thread last found the interpreter at, plus the margin; 0: unwind in full.
thread_local uint8_t t_depth_hint __attribute__((tls_model("initial-exec"))) = 0;

}  // namespace

void NativeStack::find_interpreter() {
  char executable[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", executable, sizeof executable - 1);
  InterpreterSearch search;
  if (n > 0) search.executable = std::string_view(executable, static_cast<std::size_t>(n));
  dl_iterate_phdr(find_interpreter_modules, &search);
  for (int i = 0; i < search.found; ++i)
    interpreter_[i] = Range{search.extents[i].first, search.extents[i].second};
  interpreter_count_ = search.found;
}

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
  find_interpreter();
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

NativeStack::Backtrace NativeStack::ready() {
  Backtrace fn = backtrace_.load(std::memory_order_acquire);
  if (fn == nullptr && state_.load(std::memory_order_acquire) == 0) fn = load();
  return fn;
}

int NativeStack::unwind(Backtrace fn, uint64_t* frames, int max) const {
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

int NativeStack::capture(uint64_t* frames, int max) {
  const Backtrace fn = ready();
  return fn != nullptr ? unwind(fn, frames, max) : 0;
}

int NativeStack::interpreter_frame(const uint64_t* frames, int n) const {
  for (int i = 0; i < n; ++i) {
    for (int r = 0; r < interpreter_count_; ++r) {
      if (frames[i] >= interpreter_[r].start && frames[i] < interpreter_[r].end) return i;
    }
  }
  return -1;
}

int NativeStack::capture_to_interpreter(uint64_t* frames, int max) {
  const Backtrace fn = ready();
  if (fn == nullptr) return 0;
  const int hint = t_depth_hint;
  if (hint != 0 && hint < max) {
    const int at = interpreter_frame(frames, unwind(fn, frames, hint));
    if (at >= 0) return at + 1;
  }
  const int n = unwind(fn, frames, max);
  const int at = interpreter_frame(frames, n);
  if (at < 0) return n;
  t_depth_hint = static_cast<uint8_t>(std::min(255, std::max(hint, at + 1 + kHintMargin)));
  return at + 1;
}

}  // namespace gmt::interpose
