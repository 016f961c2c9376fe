// SPDX-License-Identifier: Apache-2.0
#include "interpose/hooks/lookup_log.h"

#include <unistd.h>

#include <cstdio>

#include "interpose/runtime.h"

namespace gmt::interpose {

void log_driver_lookup(const char* via, const char* symbol, int cuda_version,
                       unsigned long long flags, const void* driver_function,
                       const void* handed_out) {
  if (!Runtime::get().config().debug_lookups) return;
  char line[512];
  const int n = std::snprintf(
      line, sizeof line, "gpumemtrace[%d]: %s(\"%s\", version %d, flags %llu) -> %p %s\n",
      static_cast<int>(getpid()), via, symbol ? symbol : "(null)", cuda_version, flags,
      driver_function, handed_out != driver_function ? "wrapped" : "passed through");
  if (n > 0) {
    const ssize_t ignored =
        write(STDERR_FILENO, line, static_cast<std::size_t>(n) < sizeof line ? n : sizeof line - 1);
    (void)ignored;
  }
}

}  // namespace gmt::interpose
