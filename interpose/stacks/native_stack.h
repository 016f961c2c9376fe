// SPDX-License-Identifier: Apache-2.0
// Captures the native call stack of the calling thread as raw return addresses.
//
// libunwind is loaded privately (RTLD_LOCAL) on first use rather than linked: linked to the
// preload library it would sit early in the program's global scope, where its _Unwind_* and
// backtrace exports would replace libgcc's for every C++ exception in the program.
#pragma once

#include <atomic>
#include <cstdint>

namespace gmt::interpose {

class NativeStack {
 public:
  // Fills `frames` with up to `max` return addresses of the caller of the hook, innermost
  // first: frames inside this library are left out. Returns how many; 0 when libunwind is not
  // available (one warning says so).
  int capture(uint64_t* frames, int max);

 private:
  using Backtrace = int (*)(void**, int);
  Backtrace load();
  void find_own_range();

  std::atomic<Backtrace> backtrace_{nullptr};
  std::atomic<int> state_{0};  // 0 not loaded, 1 loading, 2 ready, 3 unavailable
  uint64_t own_start_ = 0;
  uint64_t own_end_ = 0;
};

}  // namespace gmt::interpose
