// SPDX-License-Identifier: Apache-2.0
// The Python stack of the allocating thread: which Python functions, at which lines, led to the
// allocation. With the GIL held, through CPython's public C API, found at run time in the
// process (the preload never links libpython): any Python from 3.9 on. With the GIL released
// (PyTorch, ctypes.CDLL), by reading the thread's own frames in place (ReleasedFrameReader):
// Python 3.11 and 3.12. Nothing in a process without Python.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "interpose/record/trace_writer.h"
#include "interpose/stacks/python_frames_released.h"

namespace gmt::interpose {

class PythonStack {
 public:
  // `api_only`: frames through the C API even where they can be read in place (for the tests).
  PythonStack(TraceWriter& writer, bool api_only);
  ~PythonStack();
  PythonStack(const PythonStack&) = delete;
  PythonStack& operator=(const PythonStack&) = delete;

  // Fills `frames` with up to `max` frames, innermost first, each (code id << 32 | line), and
  // returns how many: 0 when the thread runs no Python or there is no Python. New code
  // objects are written to the trace (PythonCodeRecord) before this returns.
  int capture(uint64_t* frames, int max);

  void before_fork();
  void after_fork_in_parent();
  void after_fork_in_child();

 private:
  // The handful of CPython functions used, all stable ABI since 3.9.
  struct Api {
    int (*is_initialized)();
    int (*gil_check)();
    void* (*this_thread_state)();
    void* (*thread_frame)(void*);  // new reference
    void* (*frame_back)(void*);    // new reference
    void* (*frame_code)(void*);    // new reference
    int (*frame_line)(void*);
    int (*frame_lasti)(void*);  // 3.11 on; null before
    void (*incref)(void*);
    void (*decref)(void*);
    void* (*get_attr)(void*, const char*);  // new reference
    const char* (*as_utf8)(void*);
    void (*clear_error)();
  };

  struct CachedFrame;  // python_stack.cpp
  struct FrameCache;   // python_stack.cpp
  static void free_thread_frames(void* frames);
  FrameCache* thread_frames();

  bool resolve();
  uint32_t code_id(void* code);
  // A frame read through the C API, as (code id << 32 | line).
  uint64_t api_frame(void* frame, void* code);
  // The id of a code object met with the GIL released, whose key is `key`.
  uint32_t released_code_id(const void* code, const ReleasedFrameReader::CodeKey& key);
  // A frame met with the GIL released, as (code id << 32 | line); 0 if it cannot be read.
  uint64_t released_frame(const ReleasedFrameReader::Frame& frame);
  int capture_released(uint64_t* frames, int max);
  // Drops from a thread's frames those of code objects freed since it last looked, up to
  // `deaths` (PythonCodeDeaths::count()).
  static void forget_freed(FrameCache& frames, uint64_t deaths);
  // The same for the ids of code objects met in place (mutex_ held).
  void forget_freed_codes();
  // A frame of a trusted walk that this thread's cache does not hold: checked, named, and kept.
  uint64_t met_anew(FrameCache& frames, const void* code, const void* prev_instr, char owner,
                    uint64_t generation);
  // Names a frame read in place (a code id, a line) and keeps it in this thread's cache.
  uint64_t remember_released(FrameCache& frames, const void* code, const void* prev_instr,
                             const ReleasedFrameReader::CodeKey& key, uint64_t generation);
  std::string code_attribute(void* code, const char* name);

  TraceWriter& writer_;
  const bool api_only_;
  std::atomic<int> state_{0};  // 0 unresolved, 1 resolving, 2 ready, 3 no Python
  Api api_{};
  std::mutex mutex_;
  // Code objects seen, each kept alive by a reference of ours so that its address is never
  // reused for another function while the trace refers to it by id.
  std::unordered_map<void*, uint32_t> codes_;
  // Code objects met in place, which we cannot hold a reference to: each with where its names
  // are, until the interpreter frees it (PythonCodeDeaths), so that a new code object at its
  // address gets its own id.
  struct ReleasedCode {
    ReleasedFrameReader::CodeKey key;
    uint32_t id;
  };
  std::unordered_map<const void*, ReleasedCode> released_codes_;
  uint64_t deaths_forgotten_ = 0;  // the deaths released_codes_ is rid of
  ReleasedFrameReader released_;
  bool released_ready_ = false;
  uint32_t next_id_ = 1;
  // Which numbering of code ids a thread's cache of frames (python_stack.cpp) belongs to: a
  // fork's child numbers them again. Unique in the process (new_instance_id), so that the cache
  // of a thread never serves one PythonStack another's ids.
  std::atomic<uint64_t> ids_generation_;
  pthread_key_t frames_key_{};
  bool have_frames_key_ = false;
};

}  // namespace gmt::interpose
