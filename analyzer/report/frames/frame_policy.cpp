// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/frames/frame_policy.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <iterator>
#include <string_view>

namespace gmt::analyzer {

namespace {

std::string_view basename_of(std::string_view path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool starts_with_any(std::string_view text, std::initializer_list<std::string_view> prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](std::string_view p) { return text.starts_with(p); });
}

bool contains_any(std::string_view text, std::initializer_list<std::string_view> parts) {
  return std::any_of(parts.begin(), parts.end(),
                     [&](std::string_view p) { return text.find(p) != std::string_view::npos; });
}

// The CUDA runtime's entry points and internals by name, for a static cudart linked into the
// program (its frames have the program's module): the API (cudaMalloc, cudaMalloc<float> from
// cuda_runtime.h), its hash-named internals and namespaces.
bool cuda_runtime_symbol(std::string_view function) {
  if (starts_with_any(function, {"__cuda", "libcudart_static_", "cudart::"})) return true;
  return function.size() > 4 && function.starts_with("cuda") &&
         (std::isupper(static_cast<unsigned char>(function[4])) != 0 || function[4] == '<');
}

// The program's start and a thread's: below everything anyone wrote.
bool start_symbol(std::string_view function) {
  return function == "_start" || function == "start_thread" || function == "clone" ||
         function == "clone3" || function == "__clone" || function == "__clone3" ||
         starts_with_any(function, {"__libc_start_main", "__libc_start_call_main"});
}

// A python executable with the interpreter linked in ("python3.12"), as libpython is.
bool interpreter_executable(std::string_view name) {
  if (!name.starts_with("python")) return false;
  name.remove_prefix(6);
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
  });
}

FrameOrigin module_origin(std::string_view path) {
  const std::string_view name = basename_of(path);
  if (name.starts_with("libgpumemtrace")) return FrameOrigin::kProfiler;
  if (starts_with_any(name, {"libcuda.so", "libcudart"})) return FrameOrigin::kCudaRuntime;
  if (starts_with_any(
          name, {"libc10", "libtorch", "libcaffe2", "libxla", "xla_extension", "libjax", "libcupy",
                 "libnccl", "libcublas", "libcudnn", "libcufft", "libcurand", "libcusparse",
                 "libcusolver", "libnvrtc", "libnvJitLink", "libtensorflow", "librmm"}) ||
      contains_any(path, {"-packages/torch/", "-packages/jaxlib/", "-packages/jax/",
                          "-packages/cupy/", "-packages/cupy_backends/"})) {
    return FrameOrigin::kLibrary;
  }
  // The C/C++ runtime, and the interpreter's own calling machinery (ctypes, libffi): a Python
  // program's frames stand in for the interpreter's.
  if (starts_with_any(
          name, {"libc.so", "libc-", "libstdc++", "libgcc_s", "ld-linux", "ld64.so", "libpthread",
                 "libm.so", "libdl.so", "libc++", "libffi", "libpython"}) ||
      contains_any(path, {"/lib-dynload/"}) || interpreter_executable(name)) {
    return FrameOrigin::kSystem;
  }
  return FrameOrigin::kUser;
}

// The name without its parameters, template arguments or symbol version: "cudaMalloc" for
// "cudaMalloc<float>(float**, unsigned long)".
std::string short_name(std::string_view function) {
  return std::string(function.substr(0, function.find_first_of("(<@")));
}

// "libfoo" for "libfoo.so.1", "_ext" for "_ext.cpython-312-x86_64-linux-gnu.so".
std::string module_stem(std::string_view name) {
  return std::string(name.substr(0, std::min(name.find(".so"), name.find(".cpython-"))));
}

// What a library frame is part of, as the `via` line names it.
std::string layer_name(const SiteFrame& frame) {
  // The Python frames of a library's are our hooks' (profiler_hook_file()): CuPy's pool hook is
  // its allocation path; the roles hooks' wrapper of Module.__call__ is no layer of anyone's.
  if (frame.kind == "python")
    return frame.file && cupy_hook_file(*frame.file) ? "CuPy pool" : std::string();
  const std::string_view module = frame.module ? std::string_view(*frame.module) : "";
  const std::string_view name = basename_of(module);
  const std::string_view function = frame.function;
  if (function.find("CachingAllocator") != std::string_view::npos &&
      (name.starts_with("libc10") || function.starts_with("c10::"))) {
    return "c10 caching allocator";
  }
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 14> kLayers = {{
      {"libc10", "c10"},
      {"libtorch", "libtorch"},
      {"libcaffe2", "libtorch"},
      {"libxla", "XLA"},
      {"xla_extension", "XLA"},
      {"libjax", "XLA"},
      {"libcupy", "CuPy"},
      {"libnccl", "NCCL"},
      {"libcublasLt", "cuBLASLt"},
      {"libcublas", "cuBLAS"},
      {"libcudnn", "cuDNN"},
      {"libcufft", "cuFFT"},
      {"libcusolver", "cuSOLVER"},
      {"libcusparse", "cuSPARSE"},
  }};
  for (const auto& [prefix, layer] : kLayers) {
    if (name.starts_with(prefix)) return std::string(layer);
  }
  if (contains_any(module, {"-packages/torch/"})) return "libtorch";
  if (contains_any(module, {"-packages/jax"})) return "XLA";
  if (contains_any(module, {"-packages/cupy"})) return "CuPy";
  return module_stem(name);
}

// The API the user's side called: the outermost CUDA runtime frame's name, a name that is not
// an internal one preferred; its module's name when nothing names it.
std::optional<std::string> entry_point(const std::vector<SiteFrame>& frames, std::size_t end,
                                       std::size_t& at) {
  std::optional<std::size_t> outermost;
  for (std::size_t i = end; i-- > 0;) {
    if (frame_origin(frames[i]) != FrameOrigin::kCudaRuntime) continue;
    if (!outermost) outermost = i;
    const std::string_view function = frames[i].function;
    if (!unsymbolized(frames[i]) && function.starts_with("cu")) {
      at = i;
      return short_name(function);
    }
  }
  if (!outermost) return std::nullopt;
  at = *outermost;
  const SiteFrame& frame = frames[*outermost];
  return frame.module ? std::string(basename_of(*frame.module)) : short_name(frame.function);
}

}  // namespace

bool cupy_hook_file(std::string_view file) {
  return basename_of(file) == "gpumemtrace_cupy.py";
}

bool roles_hook_file(std::string_view file) {
  return basename_of(file) == "gpumemtrace_roles.py";
}

bool profiler_hook_file(std::string_view file) {
  return cupy_hook_file(file) || roles_hook_file(file);
}

FrameOrigin frame_origin(const SiteFrame& frame) {
  // Our hooks are Python frames of the framework's path, not the user's.
  if (frame.kind == "python")
    return frame.file && profiler_hook_file(*frame.file) ? FrameOrigin::kLibrary
                                                         : FrameOrigin::kUser;
  if (frame.kind == "attribution") return FrameOrigin::kLibrary;
  if (frame.module) {
    const FrameOrigin by_module = module_origin(*frame.module);
    if (by_module != FrameOrigin::kUser) return by_module;
  }
  if (cuda_runtime_symbol(frame.function)) return FrameOrigin::kCudaRuntime;
  if (start_symbol(frame.function)) return FrameOrigin::kSystem;
  return FrameOrigin::kUser;
}

bool unsymbolized(const SiteFrame& frame) {
  if (frame.kind == "python" || frame.kind == "attribution") return false;
  const std::string_view function = frame.function;
  if (function.starts_with("0x")) return true;
  if (!frame.module) return false;
  const std::string_view module = basename_of(*frame.module);
  return function.size() > module.size() + 3 && function.starts_with(module) &&
         function.substr(module.size(), 3) == "+0x";
}

std::optional<std::size_t> first_user_frame(const std::vector<SiteFrame>& frames) {
  // The program's own line first: a package's frames (torch's Linear.forward) are the path its
  // call took, as a native library's are.
  std::optional<std::size_t> innermost_python;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].kind != "python" || frame_origin(frames[i]) != FrameOrigin::kUser) continue;
    if (!frames[i].file || python_package(*frames[i].file).empty()) return i;
    if (!innermost_python) innermost_python = i;
  }
  if (innermost_python) return innermost_python;
  // What the CUDA runtime's entry point called is the runtime's, whatever module holds it (a
  // static cudart's helpers are in the program's): the user's code is further out.
  std::size_t outermost_cuda = 0;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (frame_origin(frames[i]) == FrameOrigin::kCudaRuntime) outermost_cuda = i + 1;
  }
  for (const std::size_t from : {outermost_cuda, std::size_t{0}}) {
    std::optional<std::size_t> fallback;
    for (std::size_t i = from; i < frames.size(); ++i) {
      if (frame_origin(frames[i]) != FrameOrigin::kUser) continue;
      if (!unsymbolized(frames[i])) return i;
      if (!fallback) fallback = i;
    }
    if (fallback) return fallback;
  }
  return std::nullopt;
}

std::string via_text(const std::vector<SiteFrame>& frames, std::size_t user) {
  if (user == 0) return {};
  std::vector<std::string> parts;
  std::size_t entry = 0;
  if (std::optional<std::string> name = entry_point(frames, user, entry)) {
    parts.push_back(std::move(*name));
    ++entry;
  }
  std::vector<std::string> packages;  // each named once, by its innermost frame
  for (std::size_t i = entry; i < user && i < frames.size(); ++i) {
    const FrameOrigin origin = frame_origin(frames[i]);
    if (origin != FrameOrigin::kLibrary && origin != FrameOrigin::kUser) continue;
    if (frames[i].kind == "python" && origin == FrameOrigin::kUser) {
      // A package's Python frame the program's line called through: "Linear.forward (torch)".
      std::string package = python_package(frames[i].file.value_or(""));
      if (package.empty() || std::find(packages.begin(), packages.end(), package) != packages.end())
        continue;
      parts.push_back(frames[i].function + " (" + package + ")");
      packages.push_back(std::move(package));
      continue;
    }
    std::string layer = frames[i].kind == "attribution" ? frames[i].function
                        : origin == FrameOrigin::kLibrary
                            ? layer_name(frames[i])
                            : module_stem(basename_of(frames[i].module.value_or("")));
    if (layer.empty() || std::find(parts.begin(), parts.end(), layer) != parts.end()) continue;
    parts.push_back(std::move(layer));
  }
  if (parts.empty()) {
    return "via " + std::to_string(user) + (user == 1 ? " internal frame" : " internal frames");
  }
  std::string text = "via " + parts[0];
  for (std::size_t i = 1; i < parts.size(); ++i) text += " \u2190 " + parts[i];
  return text;
}

std::optional<std::string> called_entry_point(const std::vector<SiteFrame>& frames) {
  std::size_t at = 0;
  std::optional<std::string> name =
      entry_point(frames, first_user_frame(frames).value_or(frames.size()), at);
  if (!name || unsymbolized(frames[at]) || !frames[at].function.starts_with("cu")) {
    return std::nullopt;
  }
  return name;
}

ShownStack shown_stack(const std::vector<SiteFrame>& frames, FrameMode mode) {
  const std::optional<std::size_t> user =
      mode == FrameMode::kUser ? first_user_frame(frames) : std::nullopt;
  if (!user) return {frames, {}};
  ShownStack shown{{frames.begin() + static_cast<std::ptrdiff_t>(*user), frames.end()},
                   via_text(frames, *user)};
  while (shown.frames.size() > 1 && frame_origin(shown.frames.back()) == FrameOrigin::kSystem) {
    shown.frames.pop_back();
  }
  return shown;
}

std::vector<SiteFrame> flame_frames(const std::vector<SiteFrame>& frames, FrameMode mode) {
  ShownStack shown = shown_stack(frames, mode);
  if (shown.via.empty()) return std::move(shown.frames);
  std::vector<SiteFrame> out;
  out.reserve(shown.frames.size() + 1);
  SiteFrame via;
  via.function = std::move(shown.via);
  via.kind = "via";
  out.push_back(std::move(via));
  std::move(shown.frames.begin(), shown.frames.end(), std::back_inserter(out));
  return out;
}

}  // namespace gmt::analyzer
