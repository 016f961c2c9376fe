// SPDX-License-Identifier: Apache-2.0
// Which frames of a stack a report shows. A stack is shown from the first frame in the user's
// code: the innermost Python frame of the program's own code (outside installed packages and the
// standard library) where there are any, the innermost Python frame where every one is a
// package's (a torchvision model's), else the first native frame outside the
// CUDA driver and runtime (a static cudart linked into the program included), the frameworks'
// allocator machinery and the libraries they call (c10, libtorch, XLA, CuPy, NCCL, cuBLAS,
// cuDNN...), the C/C++ runtime and gpumemtrace itself. The frames between it and the allocation
// fold into one line naming the path taken ("via cudaMalloc ← c10 caching allocator"). Every
// text report, the HTML page and the flame-graph exports show stacks this way; `--frames all`
// shows every frame, and JSON keeps every frame with the first user frame marked.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/model/owner_library.h"  // python_package()
#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {

enum class FrameMode {
  kUser,  // from the first user frame on, the frames before it folded into one line
  kAll,   // every frame
};

// Whose code a frame is.
enum class FrameOrigin {
  kUser,
  kCudaRuntime,  // libcuda, libcudart, a static cudart's symbols: where the allocation happens
  kLibrary,      // frameworks and CUDA libraries: c10, libtorch, XLA, CuPy, NCCL, cuBLAS...
  kSystem,       // libc, libstdc++, the dynamic loader, the program's start (_start)
  kProfiler,     // libgpumemtrace
};

FrameOrigin frame_origin(const SiteFrame& frame);

// Whether `file` is our hook into CuPy's memory pool (python/gpumemtrace_cupy.py): its frame is
// CuPy's allocation path, as our own library's frames are the profiler's.
bool cupy_hook_file(std::string_view file);
// Whether `file` is one of our Python hooks in a framework's path: CuPy's pool hook, or the roles
// hooks (python/gpumemtrace_roles.py, whose wrapper of nn.Module.__call__ is in every module call).
bool profiler_hook_file(std::string_view file);
// Whether `file` is the roles hooks (python/gpumemtrace_roles.py): their wrapper of
// nn.Module.__call__ stands between every module call and its caller, and is left out of every
// stack, so that tracing changes no line the user sees.
bool roles_hook_file(std::string_view file);

// A native frame that nothing names: its function reads "module+0xOFFSET" (or "0xADDRESS" for
// an address in no module).
bool unsymbolized(const SiteFrame& frame);

// The index of the first frame in the user's code (leaf first): the innermost Python frame of the
// program's own code, else the innermost Python frame, else
// the first symbolized native frame of the user's, else the first unsymbolized one of the user's;
// nullopt when every frame is internal (or there are none).
std::optional<std::size_t> first_user_frame(const std::vector<SiteFrame>& frames);

// The path from the first user frame `user` to the allocation, frames [0, user): "via " the
// outermost CUDA runtime entry point, then the layers that called it, nearest first:
// "via cudaMalloc ← c10 caching allocator". "" when `user` is 0.
std::string via_text(const std::vector<SiteFrame>& frames, std::size_t user);

// The CUDA entry point the program called, as its stack shows it ("cudaMalloc", where the trace
// caught only the driver call it became: a libcudart the program opened itself, whose symbols
// the preload does not stand in for); none when no runtime frame names one.
std::optional<std::string> called_entry_point(const std::vector<SiteFrame>& frames);

struct ShownStack {
  // Leaf first: from the first user frame out, without the program's start (_start,
  // __libc_start_main) past the last other frame; every frame with FrameMode::kAll, or when no
  // frame is the user's.
  std::vector<SiteFrame> frames;
  std::string via;  // the folded frames (via_text); "" when nothing is folded
};

ShownStack shown_stack(const std::vector<SiteFrame>& frames, FrameMode mode);

// The shown stack as a flame graph draws it, leaf first: the `via` line as a frame of its own
// (kind "via") below the user's frame.
std::vector<SiteFrame> flame_frames(const std::vector<SiteFrame>& frames, FrameMode mode);

}  // namespace gmt::analyzer
