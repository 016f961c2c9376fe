// SPDX-License-Identifier: Apache-2.0
#include "interpose/stacks/native_stack.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <string_view>
#include <utility>

#include "format/hot_path.h"
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

}  // namespace

void NativeStack::find_interpreter() {
  char executable[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", executable, sizeof executable - 1);
  InterpreterSearch search;
  if (n > 0) search.executable = std::string_view(executable, static_cast<std::size_t>(n));
  dl_iterate_phdr(find_interpreter_modules, &search);
  for (int i = 0; i < search.found; ++i)
    interpreter_.ranges[i] = Range{search.extents[i].first, search.extents[i].second};
  interpreter_.count = search.found;
}

void NativeStack::find_own_range() {
  RangeSearch search{reinterpret_cast<uint64_t>(&find_module_range)};
  dl_iterate_phdr(find_module_range, &search);
  own_start_ = search.start;
  own_end_ = search.end;
}

namespace {
// The calling thread's stacks unwound by libunwind, of every NativeStack.
thread_local uint64_t t_by_libunwind __attribute__((tls_model("initial-exec"))) = 0;
}  // namespace

NativeStack::Counts NativeStack::counts() const {
  return Counts{walker_.thread_counts().remembered, t_by_libunwind};
}

// Loading happens once, without holding any lock across the loader: a thread that finds
// another one loading records this event without a stack rather than wait.
void NativeStack::load() {
  int expected = 0;
  if (!state_.compare_exchange_strong(expected, 1)) return;
  find_own_range();
  find_interpreter();
  Backtrace fn = nullptr;
  if (void* libunwind = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL)) {
    fn = reinterpret_cast<Backtrace>(real_dlsym()(libunwind, "unw_backtrace"));
  }
  if (fn == nullptr) {
    print_diagnostic(
        "libunwind (libunwind.so.8) is not available: a native stack through a frame that "
        "gpumemtrace's own unwinder cannot follow (a signal handler, code without unwind "
        "tables) is recorded without native frames");
  }
  backtrace_.store(fn, std::memory_order_release);
  state_.store(2, std::memory_order_release);
}

GMT_HOT_PATH bool NativeStack::ready(Backtrace* fn) {
  int state = state_.load(std::memory_order_acquire);
  if (state == 0) {
    load();
    state = state_.load(std::memory_order_acquire);
  }
  *fn = backtrace_.load(std::memory_order_acquire);
  return state == 2;
}

GMT_HOT_PATH int NativeStack::unwind(Backtrace fn, uint64_t* frames, int max, bool to_interpreter) {
  // Room for our own frames (the hook, the recorder, this function), which are dropped.
  constexpr int kOwnFrames = 8;
  uint64_t raw[256 + kOwnFrames];
  const int room = std::min(max + kOwnFrames, static_cast<int>(sizeof raw / sizeof raw[0]));
  int n = libunwind_only_ ? -1 : walker_.walk(raw, room, to_interpreter ? &interpreter_ : nullptr);
  if (n < 0) {
    ++t_by_libunwind;
    n = fn != nullptr ? fn(reinterpret_cast<void**>(raw), room) : 0;
    if (to_interpreter) {
      const int at = interpreter_frame(raw, n);
      if (at >= 0) n = at + 1;
    }
  }
  int skip = 0;
  while (skip < n && raw[skip] >= own_start_ && raw[skip] < own_end_) ++skip;
  const int kept = std::min(n - skip, max);
  std::copy(raw + skip, raw + skip + kept, frames);
  return kept;
}

GMT_HOT_PATH int NativeStack::capture(uint64_t* frames, int max) {
  Backtrace fn = nullptr;
  return ready(&fn) ? unwind(fn, frames, max, false) : 0;
}

int NativeStack::interpreter_frame(const uint64_t* frames, int n) const {
  for (int i = 0; i < n; ++i) {
    if (interpreter_.contains(frames[i])) return i;
  }
  return -1;
}

GMT_HOT_PATH int NativeStack::capture_to_interpreter(uint64_t* frames, int max) {
  Backtrace fn = nullptr;
  return ready(&fn) ? unwind(fn, frames, max, true) : 0;
}

}  // namespace gmt::interpose
