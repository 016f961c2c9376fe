// SPDX-License-Identifier: Apache-2.0
// Uses no CUDA at all, but does what ordinary programs do under an inherited LD_PRELOAD:
// looks symbols up with dlsym (RTLD_NEXT through a wrapping library, RTLD_DEFAULT, a real
// handle), forks, and exits. Prints what it found so the test can check it.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

extern "C" int rtld_next_layer_calls;

int main() {
  const pid_t pid = getpid();  // through rtld_next_layer's wrapper
  void* libm = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
  void* cos_fn = libm != nullptr ? dlsym(libm, "cos") : nullptr;
  void* puts_fn = dlsym(RTLD_DEFAULT, "puts");
  void* missing = dlsym(RTLD_DEFAULT, "gmt_no_such_symbol_anywhere");
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("getpid_ok=%d layer_calls=%d cos=%d puts=%d missing_is_null=%d\n", pid > 0,
              rtld_next_layer_calls, cos_fn != nullptr, puts_fn != nullptr, missing == nullptr);
  return 0;
}
