// SPDX-License-Identifier: Apache-2.0
/* gpumemtrace.h: phase markers for programs traced by gpumemtrace, without NVTX.
 *
 *   gpumemtrace_push("epoch 3");   ...   gpumemtrace_pop();
 *   gpumemtrace_mark("checkpoint saved");
 *   gpumemtrace_framework_view(device, allocated_bytes, reserved_bytes);
 *   gpumemtrace_framework_block(allocator, action, device, address, size, stream);
 *
 * Header only, C and C++. When the program runs under gpumemtrace (LD_PRELOAD=libgpumemtrace.so
 * or `gpumemtrace run`), each call becomes a phase in the trace; without it, the calls do
 * nothing. Link with -ldl on C libraries older than glibc 2.34. */
#ifndef GPUMEMTRACE_H
#define GPUMEMTRACE_H

#include <dlfcn.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library's entry points, looked up once per translation unit; NULL without the library. */
typedef int (*gpumemtrace_push_fn)(const char*);
typedef int (*gpumemtrace_pop_fn)(void);
typedef void (*gpumemtrace_mark_fn)(const char*);
typedef void (*gpumemtrace_framework_view_fn)(int, uint64_t, uint64_t);

static inline void* gpumemtrace__lookup(const char* name, void** cache, int* looked) {
  if (!__atomic_load_n(looked, __ATOMIC_ACQUIRE)) {
    __atomic_store_n(cache, dlsym(RTLD_DEFAULT, name), __ATOMIC_RELAXED);
    __atomic_store_n(looked, 1, __ATOMIC_RELEASE);
  }
  return __atomic_load_n(cache, __ATOMIC_RELAXED);
}

/* Opens a phase on the calling thread; returns its nesting level, or -1 without gpumemtrace. */
static inline int gpumemtrace_push(const char* name) {
  static void* fn;
  static int looked;
  gpumemtrace_push_fn f =
      (gpumemtrace_push_fn)gpumemtrace__lookup("gpumemtrace_phase_push", &fn, &looked);
  return f ? f(name) : -1;
}

/* Closes the calling thread's innermost phase; returns its level, or -1. */
static inline int gpumemtrace_pop(void) {
  static void* fn;
  static int looked;
  gpumemtrace_pop_fn f =
      (gpumemtrace_pop_fn)gpumemtrace__lookup("gpumemtrace_phase_pop", &fn, &looked);
  return f ? f() : -1;
}

/* An instant worth seeing on the timeline. */
static inline void gpumemtrace_mark(const char* name) {
  static void* fn;
  static int looked;
  gpumemtrace_mark_fn f =
      (gpumemtrace_mark_fn)gpumemtrace__lookup("gpumemtrace_phase_mark", &fn, &looked);
  if (f) f(name);
}

/* The framework's own view of a device (what its allocator has handed out and what it holds),
 * e.g. torch.cuda.memory_allocated() and memory_reserved(): the report compares it with what
 * was really allocated. */
static inline void gpumemtrace_framework_view(int device, uint64_t allocated, uint64_t reserved) {
  static void* fn;
  static int looked;
  gpumemtrace_framework_view_fn f = (gpumemtrace_framework_view_fn)gpumemtrace__lookup(
      "gpumemtrace_framework_view", &fn, &looked);
  if (f) f(device, allocated, reserved);
}

/* A caching allocator's block event: what its user asked for (a tensor), inside the segments it
 * got from CUDA, which the trace records on its own. Called on the thread that allocates or frees,
 * so that the event gets that thread's stacks. Called by framework shims (PyTorch's allocator
 * trace tracker, CuPy's MemoryHook) and by any allocator that wants its blocks seen. The size is
 * the block's own (what the allocator counts), except for GPUMEMTRACE_ALLOCATOR_PYTORCH, whose
 * trace entries give the size asked for: the analyzer rebuilds those blocks by PyTorch's rules. */
enum gpumemtrace_allocator {
  GPUMEMTRACE_ALLOCATOR_OTHER = 0,
  GPUMEMTRACE_ALLOCATOR_PYTORCH = 1,
  GPUMEMTRACE_ALLOCATOR_CUPY = 2
};
enum gpumemtrace_block_action {
  GPUMEMTRACE_BLOCK_ALLOC = 0,          /* a block handed out */
  GPUMEMTRACE_BLOCK_FREE_REQUESTED = 1, /* the user freed it; streams may still use it */
  GPUMEMTRACE_BLOCK_FREE_COMPLETED = 2, /* back in the cache, reusable */
  GPUMEMTRACE_BLOCK_SEGMENT_ALLOC = 3,  /* the allocator took a segment from CUDA */
  GPUMEMTRACE_BLOCK_SEGMENT_FREE = 4,   /* and gave it back */
  GPUMEMTRACE_BLOCK_SEGMENT_MAP = 5,    /* expandable segments: pages mapped */
  GPUMEMTRACE_BLOCK_SEGMENT_UNMAP = 6,
  GPUMEMTRACE_BLOCK_OOM = 7 /* a request the allocator could not satisfy (size) */
};
typedef void (*gpumemtrace_framework_block_fn)(uint32_t, uint32_t, int32_t, uint64_t, uint64_t,
                                               uint64_t);

static inline void gpumemtrace_framework_block(uint32_t allocator, uint32_t action, int32_t device,
                                               uint64_t address, uint64_t size, uint64_t stream) {
  static void* fn;
  static int looked;
  gpumemtrace_framework_block_fn f = (gpumemtrace_framework_block_fn)gpumemtrace__lookup(
      "gpumemtrace_framework_block", &fn, &looked);
  if (f) f(allocator, action, device, address, size, stream);
}

#ifdef __cplusplus
}
#endif

#endif /* GPUMEMTRACE_H */
