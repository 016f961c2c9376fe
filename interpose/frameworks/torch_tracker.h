// SPDX-License-Identifier: Apache-2.0
// PyTorch's caching allocator, seen block by block: when a traced process has loaded PyTorch's
// CUDA allocator (libc10_cuda), a small shim built against that torch's own headers
// (torch_trace_shim.cpp) attaches an allocator trace tracker that hands every block event to
// gpumemtrace_framework_block. The shim is compiled once per torch version, C++ ABI and shim
// source, and cached (GPUMEMTRACE_CACHE_DIR, else $XDG_CACHE_HOME/gpumemtrace, else
// ~/.cache/gpumemtrace). Where it cannot be built or attached, the trace says why in one note
// and the segments are traced as without it.
#pragma once

#include <atomic>
#include <optional>
#include <string>

#include "format/records.h"

namespace gmt::interpose {

class TraceWriter;

// The file name the roles hooks' frames carry in Python stacks (python/gpumemtrace_roles.py, run
// from the library's copy): the reports fold them as the profiler's own.
inline constexpr const char kRolesFileName[] = "<gpumemtrace>/gpumemtrace_roles.py";

class TorchTracker {
 public:
  explicit TorchTracker(TraceWriter& writer) : writer_(writer) {}

  // A Python extension module is being initialized (its PyInit_ symbol was looked up): the
  // moment to see whether PyTorch's CUDA allocator is now loaded. Cheap when it is not.
  void extension_loaded();

  // Called at the start of every outermost hook: builds and loads the shim once PyTorch is
  // there, and attaches it as soon as the allocator is initialized (before its first segment,
  // so before its first block). One relaxed load once settled, or when there is no PyTorch.
  void maybe_attach() {
    const int state = state_.load(std::memory_order_relaxed);
    if (state == kNoTorch || state >= kSettled) return;
    advance();
  }

  // Called before each block event: the note and the allocator's settings, once attached, are
  // written before the first block (the attaching hook may have come before the trace existed).
  // One relaxed load once settled.
  void before_block() {
    if (state_.load(std::memory_order_relaxed) == kNotePending) advance();
  }

 private:
  enum State : int {
    kNoTorch,      // not loaded (yet)
    kTorchLoaded,  // libc10_cuda is loaded; the shim is not
    kBusy,         // one thread is building or loading the shim
    kShimLoaded,   // waiting for the allocator to be initialized
    kNotePending,  // attached or given up; the note waits for the trace to exist
    kSettled,
  };

  void advance();
  void load_shim();
  void try_attach();
  void finish(const std::string& note);
  void read_settings();
  // Has the interpreter run python/gpumemtrace_roles.py (embedded) on its main thread, between
  // two bytecodes: the hooks that report scopes and tensors' roles. "" when scheduled, else why
  // not, for the note.
  std::string schedule_roles();

  TraceWriter& writer_;
  std::atomic<int> state_{kNoTorch};
  void* shim_ = nullptr;
  int (*attach_)() = nullptr;
  // Written with the note: how the allocator rounds and splits blocks, when the shim could tell.
  std::optional<format::AllocatorSettingsRecord> settings_;
  std::string note_;
  std::string torch_version_;
};

}  // namespace gmt::interpose
