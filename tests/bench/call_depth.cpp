// SPDX-License-Identifier: Apache-2.0
#include "tests/bench/call_depth.h"

namespace gmt::bench {
namespace {

// noinline keeps each level a call; the empty asm reads the result after the call returns, so
// the compiler can neither turn the recursion into a loop nor make it a tail call (a jump that
// would take this frame off the stack).
[[gnu::noinline]] int descend(int remaining, Operation op, void* arg) {
  int below = 0;
  if (remaining > 1) {
    below = descend(remaining - 1, op, arg);
  } else {
    op(arg);
  }
  asm volatile("" : "+r"(below));
  return below + 1;
}

}  // namespace

void call_at_depth(int depth, Operation op, void* arg) {
  if (depth <= 0) {
    op(arg);
    return;
  }
  descend(depth, op, arg);
}

}  // namespace gmt::bench
