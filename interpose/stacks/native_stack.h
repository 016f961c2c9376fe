// SPDX-License-Identifier: Apache-2.0
// Captures the native call stack of the calling thread as raw return addresses.
//
// libunwind is loaded privately (RTLD_LOCAL) on first use rather than linked: linked to the
// preload library it would sit early in the program's global scope, where its _Unwind_* and
// backtrace exports would replace libgcc's for every C++ exception in the program.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace gmt::interpose {

class NativeStack {
 public:
  // Fills `frames` with up to `max` return addresses of the caller of the hook, innermost
  // first: frames inside this library are left out. Returns how many; 0 when libunwind is not
  // available (one warning says so).
  int capture(uint64_t* frames, int max);

  // As capture(), for a thread whose Python frames are recorded beside: the stack ends at the
  // Python interpreter's first frame (libpython, or a python executable with the interpreter
  // linked in), where the Python frames take over. The analyzer puts them there and drops the
  // native frames below, which are the interpreter's own; not unwinding them saves about half of
  // a PyTorch block's unwinding. Each thread unwinds only as deep as it last found the
  // interpreter, plus a margin, and unwinds in full when that is not deep enough.
  int capture_to_interpreter(uint64_t* frames, int max);

 private:
  using Backtrace = int (*)(void**, int);
  struct Range {
    uint64_t start = 0;
    uint64_t end = 0;
  };

  Backtrace ready();
  Backtrace load();
  void find_own_range();
  void find_interpreter();
  int unwind(Backtrace fn, uint64_t* frames, int max) const;
  // The index of the first frame in the interpreter, or -1.
  int interpreter_frame(const uint64_t* frames, int n) const;

  std::atomic<Backtrace> backtrace_{nullptr};
  std::atomic<int> state_{0};  // 0 not loaded, 1 loading, 2 ready, 3 unavailable
  uint64_t own_start_ = 0;
  uint64_t own_end_ = 0;
  // The interpreter's modules, found when libunwind is loaded (one in a python executable with
  // the interpreter linked in, or libpython beside it).
  std::array<Range, 2> interpreter_{};
  int interpreter_count_ = 0;
};

}  // namespace gmt::interpose
