// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace gmt::interpose {

namespace detail {
inline thread_local uint64_t cached_tid __attribute__((tls_model("initial-exec"))) = 0;
}

// The kernel thread id, cached: gettid is a system call and hooks are hot.
inline uint64_t thread_id() {
  if (detail::cached_tid == 0) detail::cached_tid = static_cast<uint64_t>(syscall(SYS_gettid));
  return detail::cached_tid;
}

// After fork the forking thread lives on in the child under a new id.
inline void forget_thread_id() {
  detail::cached_tid = 0;
}

}  // namespace gmt::interpose
