// SPDX-License-Identifier: Apache-2.0
// Leaks one allocation made in a function with a known name at a known line, through the static
// runtime (linked into the program, as nvcc links libcudart_static.a: the runtime's frames are
// in the program's own module), and prints the call's line (`leak_line=N`) so that a test can
// check which frame the reports start from.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

namespace leaky {

__attribute__((noinline)) void* load_table() {
  void* p = nullptr;
  std::printf("leak_line=%d\n", __LINE__ + 1);
  if (cudaMalloc(&p, 32 << 20) != cudaSuccess) std::exit(1);
  return p;
}

}  // namespace leaky

int main() {
  void* volatile table = leaky::load_table();
  (void)table;
  return 0;  // never freed
}
