// SPDX-License-Identifier: Apache-2.0
// Allocates and frees forever, reporting each completed call on stdout (one line, written with
// a single write(2) after the call returned: "a ADDRESS SIZE" or "f ADDRESS") until a test kills
// it. Whatever it reported must be in its trace, however it dies.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <deque>

namespace {

void report(const char* line) {
  const ssize_t ignored = write(STDOUT_FILENO, line, std::strlen(line));
  (void)ignored;
}

}  // namespace

int main() {
  std::deque<void*> live;
  char line[64];
  for (unsigned long i = 1;; ++i) {
    void* p = nullptr;
    const size_t size = 4096 * (i % 64 + 1);
    if (cudaMalloc(&p, size) != cudaSuccess) return 1;
    std::snprintf(line, sizeof line, "a %lu %zu\n", reinterpret_cast<unsigned long>(p), size);
    report(line);
    live.push_back(p);
    if (live.size() > 32) {
      void* old = live.front();
      live.pop_front();
      if (cudaFree(old) != cudaSuccess) return 1;
      std::snprintf(line, sizeof line, "f %lu\n", reinterpret_cast<unsigned long>(old));
      report(line);
    }
  }
}
