// SPDX-License-Identifier: Apache-2.0
// Marks that this thread is inside one of our hooks. A driver call that a hook makes, or that
// the driver makes into another hooked entry point, then passes straight through: one user
// call is one event, and the profiler's own calls are never recorded.
#pragma once

namespace gmt::interpose {

class DepthGuard {
 public:
  DepthGuard() : outermost_(depth_++ == 0) {}
  ~DepthGuard() { --depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;

  bool outermost() const { return outermost_; }

 private:
  // initial-exec: a preloaded library's TLS is static, and this avoids __tls_get_addr (which
  // may allocate) inside hooks that run during dlopen.
  static inline thread_local int depth_ __attribute__((tls_model("initial-exec"))) = 0;
  const bool outermost_;
};

}  // namespace gmt::interpose
