// SPDX-License-Identifier: Apache-2.0
// A library that wraps getpid() the way many tools wrap libc: by asking dlsym(RTLD_NEXT) for
// the real one. If an interposed dlsym lost track of who called it, RTLD_NEXT would resolve
// relative to the interposer and find this very function again: endless recursion.
#include <dlfcn.h>
#include <unistd.h>

extern "C" {

int rtld_next_layer_calls = 0;

pid_t getpid() {
  using GetpidFn = pid_t (*)();
  static GetpidFn real = reinterpret_cast<GetpidFn>(dlsym(RTLD_NEXT, "getpid"));
  ++rtld_next_layer_calls;
  return real != nullptr && real != &getpid ? real() : -1;
}
}
