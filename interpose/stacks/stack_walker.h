// SPDX-License-Identifier: Apache-2.0
// Unwinds the calling thread's stack on x86-64 by the .eh_frame rules of its frames, and
// remembers each walk: the next walk from the same place (the same stack pointer at the same
// instruction) only checks that the stack words the last one read still hold what they held,
// instead of finding each frame's rule again. A training loop reaches the allocator from the
// same few hundred places every step, so most walks are such checks: a few ns a frame, where
// libunwind's cached path costs 25-40 ns a frame on a GPU host once PyTorch's own work has
// pushed its cache out of the core's caches.
//
// The walk is exact, not a heuristic: it is a function of the start registers and the stack
// words it reads, so a walk whose every read matches yields the same frames. Frames it cannot
// follow (no rule, a DWARF expression, a signal frame) make it give up, and the caller asks
// libunwind instead.
#pragma once

#include <pthread.h>

#include <array>
#include <atomic>
#include <cstdint>

namespace gmt::interpose {

class StackWalker {
 public:
  struct Range {
    uint64_t start = 0;
    uint64_t end = 0;
  };
  // The modules where a walk may end early: after the first frame in one of them.
  struct StopModules {
    std::array<Range, 2> ranges{};
    int count = 0;
    bool contains(uint64_t pc) const {
      for (int r = 0; r < count; ++r) {
        if (pc >= ranges[r].start && pc < ranges[r].end) return true;
      }
      return false;
    }
  };

  StackWalker();
  ~StackWalker();
  StackWalker(const StackWalker&) = delete;
  StackWalker& operator=(const StackWalker&) = delete;

  // Writes up to `max` return addresses of the calling thread, innermost first: the first is in
  // walk()'s caller. With `stop`, ends after the first frame in a stop module. Returns how many,
  // or -1 when a frame has no rule this walker follows (the caller then unwinds otherwise).
  // A walker remembers walks by their start, `max` and whether they stop: a caller passes the
  // same stop modules to every walk that stops.
  int walk(uint64_t* frames, int max, const StopModules* stop);

  // A library was unloaded: the rules and walks every thread learnt are forgotten before its
  // next walk, since another library may now be loaded at the same addresses.
  void modules_unloaded() { epoch_.fetch_add(1, std::memory_order_relaxed); }

  // What the calling thread's walks found: from memory (checked), walked frame by frame, or
  // given up. For tests and the benchmark.
  struct Counts {
    uint64_t remembered = 0;
    uint64_t walked = 0;
    uint64_t given_up = 0;
  };
  Counts thread_counts() const;

 private:
  struct ThreadWalks;
  struct Start {
    uint64_t pc;
    uint64_t sp;
    uint64_t rbp;
  };

  ThreadWalks* thread_walks();
  ThreadWalks* new_thread_walks(ThreadWalks* walks, uint64_t epoch);
  static void free_thread_walks(void* walks);
  int walk_from(const Start& start, uint64_t* frames, int max, const StopModules* stop);
  // A walk frame by frame, remembered in `set` for the next walk from `start`.
  int walk_anew(ThreadWalks* w, const Start& start, uint64_t* frames, int max,
                const StopModules* stop, uint32_t shape, std::size_t set);

  pthread_key_t walks_key_{};
  bool have_walks_key_ = false;
  uint64_t id_;
  std::atomic<uint64_t> epoch_{0};  // the count of modules_unloaded()
};

}  // namespace gmt::interpose
