// SPDX-License-Identifier: Apache-2.0
// Which frames a report shows: from the first frame in the user's code, the CUDA runtime's,
// the frameworks' and the C runtime's frames before it folded into one `via` line.
#include <gtest/gtest.h>

#include <sstream>

#include "analyzer/report/frames/frame_policy.h"
#include "analyzer/report/frames/frame_text.h"
#include "tests/unit/analyzer/report/frames/site_frames.h"

namespace gmt::analyzer {
namespace {

using namespace test_frames;

std::string written(const std::vector<SiteFrame>& frames, std::size_t shown,
                    FrameMode mode = FrameMode::kUser) {
  std::ostringstream out;
  write_frames(frames, shown, "  ", out, mode);
  return out.str();
}

std::vector<std::string> functions(const std::vector<SiteFrame>& frames) {
  std::vector<std::string> out;
  for (const SiteFrame& f : frames) out.push_back(f.function);
  return out;
}

// nvcc's static cudart: its frames are in the program's own module, known by their names.
std::vector<SiteFrame> static_cudart_stack() {
  return {in("libcudart_static_5382377d0a1e5c1bd0b5b1cf9d4a2c4b06f5ee10", "/opt/app/train"),
          in("train+0x41b5e", "/opt/app/train"),
          in("cudaMalloc", "/opt/app/train"),
          at("cudaMalloc<float>", "/usr/local/cuda/include/cuda_runtime.h", 879),
          at("allocate_weights(int)", "/src/model.cu", 12),
          at("main", "/src/main.cu", 40),
          at("__libc_start_call_main", "libc_start_call_main.h", 58, "/lib/libc.so.6"),
          in("__libc_start_main@@GLIBC_2.34", "/lib/libc.so.6"),
          in("_start", "/opt/app/train")};
}

TEST(FramePolicy, StaticCudartFramesFoldIntoTheEntryPoint) {
  const std::vector<SiteFrame> frames = static_cudart_stack();
  EXPECT_EQ(first_user_frame(frames), std::optional<std::size_t>(4));
  const ShownStack shown = shown_stack(frames, FrameMode::kUser);
  EXPECT_EQ(functions(shown.frames), (std::vector<std::string>{"allocate_weights(int)", "main"}));
  EXPECT_EQ(shown.via, "via cudaMalloc");
  EXPECT_EQ(written(frames, 4),
            "  allocate_weights(int)  model.cu:12\n  "
            "  via cudaMalloc\n  main  main.cu:40\n");
  EXPECT_EQ(written(frames, 1),
            "  allocate_weights(int)  model.cu:12\n    via cudaMalloc\n  ... 1 more frames\n");
}

TEST(FramePolicy, SharedRuntimeAndDriverFramesFold) {
  const std::vector<SiteFrame> frames = {
      in("libcuda.so.1+0x2a1f0", "/usr/lib/libcuda.so.1"),
      in("libcudart.so.13+0x41b5e", "/x/libcudart.so.13"), in("cudaMalloc", "/x/libcudart.so.13"),
      at("allocate", "/src/model.cpp", 12), at("main", "/src/main.cpp", 40)};
  EXPECT_EQ(written(frames, 4),
            "  allocate  model.cpp:12\n    via cudaMalloc\n  main  main.cpp:40\n");
  // Nothing named the runtime's entry: its library does.
  const std::vector<SiteFrame> unnamed = {in("libcudart.so.13+0x41b5e", "/x/libcudart.so.13"),
                                          at("allocate", "/src/model.cpp", 12)};
  EXPECT_EQ(shown_stack(unnamed, FrameMode::kUser).via, "via libcudart.so.13");
  // The driver API called directly.
  const std::vector<SiteFrame> driver = {in("cuMemAlloc_v2", "/usr/lib/libcuda.so.1"),
                                         at("allocate", "/src/model.cpp", 12)};
  EXPECT_EQ(written(driver, 3), "  allocate  model.cpp:12\n    via cuMemAlloc_v2\n");
}

// PyTorch: the runtime, the caching allocator, ATen, then the Python line that asked.
TEST(FramePolicy, PythonFramesLeadPastTheFramework) {
  const std::vector<SiteFrame> frames = {
      in("libcudart.so.13+0x41b5e", "/x/libcudart.so.13"),
      in("cudaMalloc", "/x/libcudart.so.13"),
      in("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, "
         "unsigned long, CUstream_st*)",
         "/site-packages/torch/lib/libc10_cuda.so"),
      in("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, "
         "signed char, unsigned long, CUstream_st*)",
         "/site-packages/torch/lib/libc10_cuda.so"),
      in("at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*)",
         "/site-packages/torch/lib/libtorch_cpu.so"),
      in("torch::autograd::THPVariable_zeros(_object*, _object*, _object*)",
         "/site-packages/torch/lib/libtorch_python.so"),
      python("train_step", "/src/train.py", 30),
      python("<module>", "/src/train.py", 37)};
  EXPECT_EQ(first_user_frame(frames), std::optional<std::size_t>(6));
  EXPECT_EQ(written(frames, 4),
            "  train_step  train.py:30\n"
            "    via cudaMalloc \u2190 c10 caching allocator \u2190 libtorch\n"
            "  <module>  train.py:37\n");
}

// The classic evaluation leak (`total += model(x).square().mean()`): the output of `self.b(h)`
// is made in torch's Linear.forward, called from the user's Net.forward. The user's line leads;
// torch's Python frames fold into the `via` line, named once per package by its innermost frame.
std::vector<SiteFrame> linear_in_user_module() {
  return {
      in("cudaMalloc", "/x/libcudart.so.13"),
      in("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, "
         "unsigned long, CUstream_st*)",
         "/env/lib/python3.12/site-packages/torch/lib/libc10_cuda.so"),
      in("at::native::linear(at::Tensor const&, at::Tensor const&)",
         "/env/lib/python3.12/site-packages/torch/lib/libtorch_cpu.so"),
      in("torch::autograd::THPVariable_linear(_object*, _object*, _object*)",
         "/env/lib/python3.12/site-packages/torch/lib/libtorch_python.so"),
      python("Linear.forward", "/env/lib/python3.12/site-packages/torch/nn/modules/linear.py", 134),
      python("Module._call_impl", "/env/lib/python3.12/site-packages/torch/nn/modules/module.py",
             1784),
      python("Module._wrapped_call_impl",
             "/env/lib/python3.12/site-packages/torch/nn/modules/module.py", 1773),
      python("Net.forward", "/home/u/g_leak2.py", 15),
      python("Module._call_impl", "/env/lib/python3.12/site-packages/torch/nn/modules/module.py",
             1784),
      python("contextmanager.inner", "/usr/lib/python3.12/contextlib.py", 81),
      python("evaluate", "/home/u/g_leak2.py", 22)};
}

TEST(FramePolicy, TheProgramsOwnPythonLineLeadsPastInstalledPackages) {
  const std::vector<SiteFrame> frames = linear_in_user_module();
  EXPECT_EQ(first_user_frame(frames), std::optional<std::size_t>(7));
  EXPECT_EQ(written(frames, 4),
            "  Net.forward  g_leak2.py:15\n"
            "    via cudaMalloc \u2190 c10 caching allocator \u2190 libtorch \u2190 Linear.forward "
            "(torch)\n"
            "  Module._call_impl  module.py:1784\n"
            "  contextmanager.inner  contextlib.py:81\n"
            "  evaluate  g_leak2.py:22\n");
  // Every frame with --frames all.
  EXPECT_EQ(shown_stack(frames, FrameMode::kAll).frames.size(), frames.size());
}

// A model from torchvision: every Python frame is a package's, and the innermost leads as before.
TEST(FramePolicy, WhereEveryPythonFrameIsAPackagesTheInnermostLeads) {
  const std::vector<SiteFrame> frames = {
      in("cudaMalloc", "/x/libcudart.so.13"),
      python("Conv2d._conv_forward",
             "/usr/local/lib/python3.11/dist-packages/torch/nn/modules/conv.py", 548),
      python("ResNet.forward",
             "/usr/local/lib/python3.11/dist-packages/torchvision/models/resnet.py", 285),
      python("run", "/usr/lib/python3.11/runpy.py", 88)};
  EXPECT_EQ(first_user_frame(frames), std::optional<std::size_t>(1));
}

TEST(FramePolicy, PythonFilesOfPackagesAndTheStandardLibraryAreKnown) {
  EXPECT_EQ(python_package("/env/lib/python3.12/site-packages/torch/nn/modules/linear.py"),
            "torch");
  EXPECT_EQ(python_package("/usr/lib/python3/dist-packages/numpy/core/numeric.py"), "numpy");
  EXPECT_EQ(python_package("/env/lib/python3.12/site-packages/six.py"), "six");
  EXPECT_EQ(python_package("/usr/lib/python3.12/contextlib.py"), "python");
  EXPECT_EQ(python_package("/opt/conda/lib/python3.11/concurrent/futures/thread.py"), "python");
  EXPECT_EQ(python_package("<frozen runpy>"), "python");
  EXPECT_EQ(python_package("/home/u/g_leak2.py"), "");
  EXPECT_EQ(python_package("/home/u/lib/python_tools/run.py"), "");
  EXPECT_EQ(python_package("<string>"), "");
}

// CuPy's pool reports its blocks through our Python hook (python/gpumemtrace_cupy.py), which
// calls us through ctypes: the hook's frame is CuPy's allocation path, the user's line is past it.
TEST(FramePolicy, OurCupyHooksFrameIsCupysPathNotTheUsers) {
  const std::vector<SiteFrame> frames = {
      in("gpumemtrace_framework_block", "/opt/gpumemtrace/lib/libgpumemtrace.so"),
      in("ffi_call", "/usr/lib/x86_64-linux-gnu/libffi.so.8"),
      in("_ctypes_callproc",
         "/usr/lib/python3.12/lib-dynload/_ctypes.cpython-312-x86_64-linux-gnu.so"),
      in("_PyEval_EvalFrameDefault", "/usr/bin/python3.12"),
      python("_make_hook.<locals>.BlockHook.malloc_postprocess",
             "/opt/gpumemtrace/python/gpumemtrace_cupy.py", 57),
      python("keep", "/src/cupy_planted_leak.py", 20),
      python("main", "/src/cupy_planted_leak.py", 32)};
  EXPECT_EQ(frame_origin(frames[3]), FrameOrigin::kSystem);  // the interpreter, linked in
  EXPECT_EQ(frame_origin(frames[4]), FrameOrigin::kLibrary);
  EXPECT_EQ(frame_origin(frames[5]), FrameOrigin::kUser);
  EXPECT_EQ(first_user_frame(frames), std::optional<std::size_t>(5));
  EXPECT_TRUE(cupy_hook_file("/x/python/gpumemtrace_cupy.py"));
  EXPECT_FALSE(cupy_hook_file("/x/python/my_gpumemtrace_cupy.py.bak"));
  EXPECT_EQ(written(frames, 2),
            "  keep  cupy_planted_leak.py:20\n"
            "    via CuPy pool\n"
            "  main  cupy_planted_leak.py:32\n");
}

// The roles hooks' wrapper of nn.Module.__call__ (python/gpumemtrace_roles.py, compiled by the
// library under its own name) is in every module call's stack: never the user's line.
TEST(FramePolicy, TheRolesWrapperOfModuleCallIsNeverTheUsersLine) {
  const std::vector<SiteFrame> frames = {
      python("Linear.forward", "/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py",
             134),
      python("_install.<locals>.call", "<gpumemtrace>/gpumemtrace_roles.py", 169),
      python("Net.forward", "/src/train.py", 12)};
  EXPECT_EQ(frame_origin(frames[1]), FrameOrigin::kLibrary);
  EXPECT_EQ(frame_origin(frames[2]), FrameOrigin::kUser);
  // Nor a layer the via line names (it once read "CuPy pool").
  const std::vector<SiteFrame> block = {
      python("Linear.forward", "/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py",
             134),
      python("_install.<locals>.call", "<gpumemtrace>/gpumemtrace_roles.py", 169),
      python("Net.forward", "/src/train.py", 12), python("main", "/src/train.py", 30)};
  EXPECT_EQ(written(block, 2),
            "  Net.forward  train.py:12\n"
            "    via Linear.forward (torch)\n"
            "  main  train.py:30\n");
}

TEST(FramePolicy, UnsymbolizedFramesNeverLead) {
  const std::vector<SiteFrame> frames = {
      in("cudaMalloc", "/x/libcudart.so.13"), in("libplugin.so+0x1f00", "/opt/app/libplugin.so"),
      at("load_plugin", "/src/plugin.cpp", 7), at("main", "/src/main.cpp", 40)};
  EXPECT_TRUE(unsymbolized(frames[1]));
  EXPECT_FALSE(unsymbolized(frames[2]));
  EXPECT_EQ(first_user_frame(frames), std::optional<std::size_t>(2));
  EXPECT_EQ(written(frames, 3),
            "  load_plugin  plugin.cpp:7\n    via cudaMalloc \u2190 libplugin\n"
            "  main  main.cpp:40\n");
  // An unsymbolized frame of the user's leads only when nothing else could.
  const std::vector<SiteFrame> stripped = {
      in("cudaMalloc", "/x/libcudart.so.13"), in("train+0x1234", "/opt/app/train"),
      in("train+0x5678", "/opt/app/train"), in("__libc_start_main", "/lib/libc.so.6")};
  EXPECT_EQ(first_user_frame(stripped), std::optional<std::size_t>(1));
  EXPECT_EQ(written(stripped, 4), "  train+0x1234\n    via cudaMalloc\n  train+0x5678\n");
  EXPECT_EQ(frame_text(stripped[1]), "train+0x1234");
}

// Every frame internal: shown whole, nothing folded.
TEST(FramePolicy, AllInternalStacksAreShownWhole) {
  const std::vector<SiteFrame> frames = {
      in("cudaMalloc", "/x/libcudart.so.13"), in("ncclProxyService", "/x/libnccl.so.2"),
      in("start_thread", "/lib/libc.so.6"), in("clone3", "/lib/libc.so.6")};
  EXPECT_EQ(first_user_frame(frames), std::nullopt);
  const ShownStack shown = shown_stack(frames, FrameMode::kUser);
  EXPECT_EQ(shown.frames.size(), 4u);
  EXPECT_EQ(shown.via, "");
  EXPECT_EQ(written({}, 3), "  (no stack recorded)\n");
}

TEST(FramePolicy, FramesAllShowsEveryFrame) {
  const std::vector<SiteFrame> frames = static_cudart_stack();
  const ShownStack shown = shown_stack(frames, FrameMode::kAll);
  EXPECT_EQ(shown.frames.size(), frames.size());
  EXPECT_EQ(shown.via, "");
  EXPECT_EQ(written(frames, 2, FrameMode::kAll),
            "  libcudart_static_5382377d0a1e5c1bd0b5b1cf9d4a2c4b06f5ee10  (train)\n"
            "  train+0x41b5e\n  cudaMalloc  (train)\n"
            "  cudaMalloc<float>  cuda_runtime.h:879\n  allocate_weights(int)  model.cu:12\n"
            "  main  main.cu:40\n  __libc_start_call_main  libc_start_call_main.h:58\n"
            "  __libc_start_main@@GLIBC_2.34  (libc.so.6)\n  _start  (train)\n");
}

// A flame graph: the via line is the leaf, below the user's frame.
TEST(FramePolicy, FlameFramesEndInTheViaFrame) {
  const std::vector<SiteFrame> flame = flame_frames(static_cudart_stack(), FrameMode::kUser);
  EXPECT_EQ(functions(flame),
            (std::vector<std::string>{"via cudaMalloc", "allocate_weights(int)", "main"}));
  EXPECT_EQ(flame[0].kind, "via");
  EXPECT_EQ(flame_frames(static_cudart_stack(), FrameMode::kAll).size(), 9u);
}

TEST(FramePolicy, OriginsByModuleAndName) {
  EXPECT_EQ(frame_origin(in("f", "/usr/lib/x86_64-linux-gnu/libcuda.so.1")),
            FrameOrigin::kCudaRuntime);
  EXPECT_EQ(frame_origin(in("__cudaRegisterFatBinary", "/opt/app/train")),
            FrameOrigin::kCudaRuntime);
  EXPECT_EQ(frame_origin(in("cudart::globalState::initializeDriver()", "/opt/app/train")),
            FrameOrigin::kCudaRuntime);
  EXPECT_EQ(frame_origin(in("cudaless_helper()", "/opt/app/train")), FrameOrigin::kUser);
  EXPECT_EQ(frame_origin(in("f", "/x/libcublasLt.so.12")), FrameOrigin::kLibrary);
  EXPECT_EQ(frame_origin(in("f", "/x/site-packages/jaxlib/xla_extension.so")),
            FrameOrigin::kLibrary);
  EXPECT_EQ(frame_origin(in("f", "/x/libstdc++.so.6")), FrameOrigin::kSystem);
  EXPECT_EQ(frame_origin(in("f", "/x/libgpumemtrace.so")), FrameOrigin::kProfiler);
  EXPECT_EQ(frame_origin(python("f", "/x/site-packages/torch/nn/module.py", 3)),
            FrameOrigin::kUser);
}

}  // namespace
}  // namespace gmt::analyzer
