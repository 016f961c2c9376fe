// SPDX-License-Identifier: Apache-2.0
// Captures the native call stack of the calling thread as raw return addresses: by our own
// walker of .eh_frame rules (stack_walker.h), which remembers its walks, and by libunwind where
// a frame has rules the walker does not follow.
//
// libunwind is loaded privately (RTLD_LOCAL) on first use rather than linked: linked to the
// preload library it would sit early in the program's global scope, where its _Unwind_* and
// backtrace exports would replace libgcc's for every C++ exception in the program.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "interpose/stacks/stack_walker.h"

namespace gmt::interpose {

class NativeStack {
 public:
  // `libunwind_only`: every stack by libunwind, our walker unused (GPUMEMTRACE_UNWIND).
  explicit NativeStack(bool libunwind_only = false) : libunwind_only_(libunwind_only) {}

  // Fills `frames` with up to `max` return addresses of the caller of the hook, innermost
  // first: frames inside this library are left out. Returns how many; 0 when neither the walker
  // nor libunwind can unwind this stack (a warning says once that libunwind is missing).
  int capture(uint64_t* frames, int max);

  // As capture(), for a thread whose Python frames are recorded beside: the stack ends at the
  // Python interpreter's first frame (libpython, or a python executable with the interpreter
  // linked in), where the Python frames take over. The analyzer puts them there and drops the
  // native frames below, which are the interpreter's own; not unwinding them saves about half of
  // a PyTorch block's unwinding.
  int capture_to_interpreter(uint64_t* frames, int max);

  // A library was unloaded (dlclose).
  void modules_unloaded() { walker_.modules_unloaded(); }

  // How the calling thread's stacks were unwound so far (GPUMEMTRACE_SELF_TIME's note).
  struct Counts {
    uint64_t remembered = 0;    // by a remembered walk
    uint64_t by_libunwind = 0;  // by libunwind
  };
  Counts counts() const;

 private:
  using Backtrace = int (*)(void**, int);
  using Range = StackWalker::Range;

  // False until the modules are known; then libunwind's entry, or null without it.
  bool ready(Backtrace* fn);
  void load();
  void find_own_range();
  void find_interpreter();
  // Our own frames are dropped; with `to_interpreter`, the walk ends at the interpreter.
  int unwind(Backtrace fn, uint64_t* frames, int max, bool to_interpreter);
  // The index of the first frame in the interpreter, or -1.
  int interpreter_frame(const uint64_t* frames, int n) const;

  std::atomic<Backtrace> backtrace_{nullptr};
  std::atomic<int> state_{0};  // 0 not loaded, 1 loading, 2 ready
  uint64_t own_start_ = 0;
  uint64_t own_end_ = 0;
  // The interpreter's modules, found when libunwind is loaded (one in a python executable with
  // the interpreter linked in, or libpython beside it).
  StackWalker::StopModules interpreter_;
  StackWalker walker_;
  const bool libunwind_only_;
};

}  // namespace gmt::interpose
