// SPDX-License-Identifier: Apache-2.0
// The CUDA runtime call (cudaMalloc, cudaFreeAsync, ...) the calling thread is inside, so that
// the driver call it becomes is recorded once, under both names. Set by the runtime wrappers
// (hooks/runtime_api.cpp) for their outermost call only: what the program called is the name
// the user knows, whatever the runtime calls on its way down.
#pragma once

#include "format/api.h"

namespace gmt::interpose {

class PublicApiScope {
 public:
  explicit PublicApiScope(format::Api api);
  ~PublicApiScope();
  PublicApiScope(const PublicApiScope&) = delete;
  PublicApiScope& operator=(const PublicApiScope&) = delete;

  // kUnknown when the thread is not inside a runtime call we wrap.
  static format::Api current();

 private:
  const bool outermost_;
};

}  // namespace gmt::interpose
