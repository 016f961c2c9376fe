// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/owner_library.h"

#include <gtest/gtest.h>

namespace gmt::analyzer {
namespace {

format::ModuleRecord module(const std::string& path, uint64_t start, uint64_t end) {
  format::ModuleRecord m;
  m.path = path;
  m.start = start;
  m.end = end;
  return m;
}

TEST(LibraryName, MapsKnownLibrariesToShortNames) {
  EXPECT_EQ(library_name("/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5"), "libnccl");
  EXPECT_EQ(library_name("/opt/cuda/lib64/libcublasLt.so.12"), "libcublas");
  EXPECT_EQ(library_name("/opt/cuda/lib64/libcudnn_ops.so.9"), "libcudnn");
  EXPECT_EQ(library_name("/site-packages/torch/lib/libc10_cuda.so"), "pytorch");
  EXPECT_EQ(library_name("/site-packages/torch/lib/libtorch_cuda.so"), "pytorch");
  EXPECT_EQ(library_name("/site-packages/jaxlib/xla_extension.so"), "jax");
  EXPECT_EQ(library_name("/site-packages/jax_plugins/cuda/libxla_cuda.so"), "jax");
  // JAX's GPU plugin, where XLA's allocator runs, and the kernels that come with it.
  EXPECT_EQ(library_name("/site-packages/jax_plugins/xla_cuda12/xla_cuda_plugin.so"), "jax");
  EXPECT_EQ(library_name("/opt/xla/xla_cuda_plugin.so"), "jax");
  EXPECT_EQ(library_name("/site-packages/jax_cuda12_plugin/_cusolver.so"), "jax");
  EXPECT_EQ(library_name("/site-packages/cupy/_core/core.cpython-311-x86_64-linux-gnu.so"), "cupy");
  EXPECT_EQ(library_name("/usr/lib/libfoo.so.1.2.3"), "libfoo");
  EXPECT_EQ(library_name("/home/me/bin/train"), "train");
}

TEST(PassesAllocationsOn, IsTheCudaPlumbingTheLoaderAndLibc) {
  EXPECT_TRUE(passes_allocations_on("/usr/lib/libcuda.so.1"));
  EXPECT_TRUE(passes_allocations_on("/usr/local/cuda/lib64/libcudart.so.13"));
  EXPECT_TRUE(passes_allocations_on("/build/lib/libgpumemtrace.so"));
  EXPECT_TRUE(passes_allocations_on("/lib64/ld-linux-x86-64.so.2"));
  EXPECT_TRUE(passes_allocations_on("/lib/x86_64-linux-gnu/libc.so.6"));
  EXPECT_FALSE(passes_allocations_on("/usr/lib/libcublas.so.12"));
  EXPECT_FALSE(passes_allocations_on("/usr/lib/libcudnn.so.9"));
}

TEST(OwnerLibrary, IsTheFirstModuleOfTheStackPastTheCudaPlumbing) {
  TraceSummary trace;
  trace.argv = {"/home/me/train"};
  trace.modules = {module("/usr/lib/libcudart.so.13", 0x1000, 0x2000),
                   module("/usr/lib/libnccl.so.2", 0x3000, 0x4000), module("", 0x5000, 0x6000)};
  trace.stacks[1] = {0x1100, 0x3100, 0x5100};  // cudart, then NCCL, then the program
  trace.stacks[2] = {0x1100, 0x5100};          // cudart, then the program (no path recorded)
  trace.stacks[3] = {0x1100, 0x9000};          // cudart, then nothing known
  EXPECT_EQ(owner_library(trace, 1), "libnccl");
  EXPECT_EQ(owner_library(trace, 2), "train");
  EXPECT_EQ(owner_library(trace, 3), "unknown");
  EXPECT_EQ(owner_library(trace, 0), "unknown");   // recorded without a stack
  EXPECT_EQ(owner_library(trace, 42), "unknown");  // never recorded
  OwnerLibraryCache cache(trace);
  EXPECT_EQ(cache.of(1), "libnccl");
  EXPECT_EQ(cache.of(1), "libnccl");
}

// A block of CuPy's pool reaches us from Python through ctypes: its native frames are the
// interpreter's calling machinery, and its block events say whose it is.
TEST(OwnerLibrary, AStackOfAnAllocatorsBlocksIsThatFrameworks) {
  TraceSummary trace;
  trace.modules = {module("/usr/lib/x86_64-linux-gnu/libffi.so.8", 0x1000, 0x2000)};
  for (uint32_t id : {1, 2, 3, 4, 5}) trace.stacks[id] = {0x1100};
  const auto site = [&](format::BlockAllocator allocator, uint32_t stack) {
    BlockSiteStats s;
    s.allocator = static_cast<uint32_t>(allocator);
    s.device = 0;
    s.stack = stack;
    trace.block_sites[block_site_key(s.allocator, s.device, stack)] = s;
  };
  site(format::BlockAllocator::kCupy, 1);
  site(format::BlockAllocator::kPytorch, 2);
  site(format::BlockAllocator::kCupy, 3);  // two allocators' blocks at one stack: neither's
  site(format::BlockAllocator::kPytorch, 3);
  site(format::BlockAllocator::kCupy, 0);  // without a stack: says nothing of stack 0's owner
  site(format::BlockAllocator::kOther, 4);
  // Python frames alone: a line's blocks and a driver allocation of that line share the stack.
  site(format::BlockAllocator::kPytorch, 5);
  SiteStats driver;
  driver.device = 0;
  driver.stack = 5;
  trace.sites[site_key(0, 5)] = driver;
  OwnerLibraryCache owners(trace);
  EXPECT_EQ(owners.of(1), "cupy");
  EXPECT_EQ(owners.of(2), "pytorch");
  EXPECT_EQ(owners.of(3), "libffi");
  EXPECT_EQ(owners.of(4), "libffi");  // an allocator this build does not know: by its frames
  EXPECT_EQ(owners.of(5), "libffi");  // shared with a driver allocation: by its frames
  EXPECT_EQ(owners.of(0), "unknown");
  EXPECT_EQ(owner_library(trace, 1), "libffi");  // the frames alone
  EXPECT_STREQ(allocator_library(static_cast<int>(format::BlockAllocator::kCupy)), "cupy");
  EXPECT_EQ(allocator_library(static_cast<int>(format::BlockAllocator::kOther)), nullptr);
}

// Python calling CUDA through ctypes: past the runtime, the native frames are the interpreter's
// calling machinery; the call is the Python code's, named by its innermost frame outside the
// standard library: the program's file, or the package the line is in.
TEST(OwnerLibrary, ACallThroughCtypesIsOwnedByThePythonCodeThatMadeIt) {
  TraceSummary trace;
  trace.argv = {"/usr/bin/python3.12", "train.py"};
  trace.modules = {module("/usr/lib/libcudart.so.13", 0x1000, 0x2000),
                   module("/usr/lib/x86_64-linux-gnu/libffi.so.8", 0x3000, 0x4000),
                   module("/usr/lib/python3.12/lib-dynload/_ctypes.cpython-312-x86_64-linux-gnu.so",
                          0x5000, 0x6000),
                   module("/usr/bin/python3.12", 0x7000, 0x8000)};
  trace.python_code[1] = {"allocate", "/src/train.py"};
  trace.python_code[2] = {"CDLL.__getitem__", "/usr/lib/python3.12/ctypes/__init__.py"};
  trace.python_code[3] = {"Pool.malloc", "/env/lib/python3.12/site-packages/mylib/pool.py"};
  const auto python = [](uint64_t code, uint64_t line) { return code << 32 | line; };
  for (uint32_t id : {1, 2, 3, 4}) trace.stacks[id] = {0x1100, 0x3100, 0x5100, 0x7100};
  trace.python_stacks[1] = {python(1, 12)};
  trace.python_stacks[2] = {python(2, 400), python(1, 12)};  // the standard library passes it on
  trace.python_stacks[3] = {python(3, 7), python(1, 12)};    // a package's line made it
  // Stack 4 has no Python frames: its native frames alone.
  EXPECT_EQ(owner_library(trace, 1), "train.py");
  EXPECT_EQ(owner_library(trace, 2), "train.py");
  EXPECT_EQ(owner_library(trace, 3), "mylib");
  EXPECT_EQ(owner_library(trace, 4), "libffi");
  trace.python_code[3].file = "/env/lib/python3.12/site-packages/torch/cuda/memory.py";
  EXPECT_EQ(python_owner(trace, 3), "pytorch");
}

TEST(OwnerLibrary, UsesTheModulesLoadedWhenTheStackWasRecorded) {
  TraceSummary trace;
  trace.modules = {module("/plugins/libold.so", 0x1000, 0x2000),
                   module("/plugins/libnew.so", 0x1000, 0x2000)};
  trace.stacks[1] = {0x1100};
  trace.stack_module_epoch[1] = 1;  // before libnew replaced libold at the same addresses
  trace.stacks[2] = {0x1100};
  trace.stack_module_epoch[2] = 2;
  EXPECT_EQ(owner_library(trace, 1), "libold");
  EXPECT_EQ(owner_library(trace, 2), "libnew");
}

TEST(CachingAllocatorLibrary, IsTheFrameworks) {
  EXPECT_TRUE(caching_allocator_library("pytorch"));
  EXPECT_TRUE(caching_allocator_library("jax"));
  EXPECT_TRUE(caching_allocator_library("cupy"));
  EXPECT_FALSE(caching_allocator_library("libnccl"));
}

TEST(KeepsMemoryOnPurpose, IsCublasCudnnNcclAndXla) {
  EXPECT_TRUE(keeps_memory_on_purpose(library_name("/opt/cuda/lib64/libcublasLt.so.12")));
  EXPECT_TRUE(keeps_memory_on_purpose(library_name("/opt/cuda/lib64/libcublas.so.12")));
  EXPECT_TRUE(keeps_memory_on_purpose(library_name("/opt/cuda/lib64/libcudnn_ops.so.9")));
  EXPECT_TRUE(keeps_memory_on_purpose(library_name("/usr/lib/libnccl.so.2.21.5")));
  EXPECT_TRUE(keeps_memory_on_purpose(library_name("/site-packages/jaxlib/xla_extension.so")));
  EXPECT_FALSE(keeps_memory_on_purpose("pytorch"));
  EXPECT_FALSE(keeps_memory_on_purpose("cupy"));
  EXPECT_FALSE(keeps_memory_on_purpose("train"));
  EXPECT_FALSE(keeps_memory_on_purpose("unknown"));
}

}  // namespace
}  // namespace gmt::analyzer
