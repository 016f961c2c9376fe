// SPDX-License-Identifier: Apache-2.0
// The library that owns an allocation: the first module of its native stack that is not CUDA's
// own plumbing (driver, runtime), this profiler, the loader or libc. Reports group by it ("how
// much does NCCL hold?") and the leak classes ask it whether a framework's caching allocator
// made the allocation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {

// The short name of a module: "libnccl", "libcublas", "libcudnn", "pytorch" (libc10_cuda,
// libtorch*), "jax" (jaxlib, libxla, xla_extension, the GPU plugin xla_cuda_plugin and what is
// under jax_plugins/ or jax_cuda12_plugin/), "cupy", else the file's basename without
// its ".so" and version suffix ("libfoo.so.1.2" -> "libfoo", "/usr/bin/train" -> "train").
std::string library_name(std::string_view module_path);

// The installed package a Python file is part of ("torch" for .../site-packages/torch/nn/...,
// "python" for the standard library and frozen modules); "" for the program's own code.
std::string python_package(std::string_view file);

// True for modules that only pass an allocation on: the CUDA driver and runtime, libgpumemtrace,
// the dynamic loader and the C library.
bool passes_allocations_on(std::string_view module_path);

// True for the libraries whose caching allocators keep freed memory for reuse on purpose.
bool caching_allocator_library(std::string_view library);

// True for the libraries (library_name()) that keep memory for their whole life on purpose:
// cuBLAS and cuBLASLt workspaces ("libcublas"), cuDNN's ("libcudnn"), NCCL's buffers
// ("libnccl"), XLA's preallocated pool ("jax").
bool keeps_memory_on_purpose(std::string_view library);

// The library of a caching allocator (format::BlockAllocator) whose block events name it:
// "pytorch", "cupy"; null for an allocator this build does not know.
const char* allocator_library(int allocator);

// The owning library of the allocations made at `stack_id` in `trace`, by its native frames;
// "unknown" when the stack was not recorded or none of its frames lies in a known module. A call
// made from Python through the interpreter's machinery (ctypes) is owned by python_owner().
std::string owner_library(const TraceSummary& trace, uint32_t stack_id);
// The owner by the stack's Python frames: the innermost outside the standard library names its
// package ("pytorch" for torch, "jax", "cupy", else the package's name) or, in the program's own
// code, its file ("train.py"); "" when the stack has no such frame.
std::string python_owner(const TraceSummary& trace, uint32_t stack_id);

// The owner every report uses, remembered per stack (a report asks for the same stacks many
// times): a stack at which a caching allocator's blocks, and nothing else, were recorded belongs
// to that allocator's framework, whatever its frames (CuPy's pool reports its blocks from Python
// through ctypes, so they show only the interpreter's calling machinery); any other,
// owner_library().
class OwnerLibraryCache {
 public:
  explicit OwnerLibraryCache(const TraceSummary& trace);
  const std::string& of(uint32_t stack_id);

 private:
  // Blocks of two allocators at one stack (a Python-only stack, say): neither owns it.
  static constexpr uint32_t kMixedAllocators = 0xFFFFFFFF;
  std::string owner_of(uint32_t stack_id) const;

  const TraceSummary& trace_;
  std::unordered_map<uint32_t, uint32_t> block_allocators_;  // stack -> BlockAllocator
  std::unordered_map<uint32_t, std::string> owners_;
};

}  // namespace gmt::analyzer
