// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/owner_library.h"

#include <algorithm>
#include <cctype>
#include <unordered_set>

namespace gmt::analyzer {
namespace {

std::string_view basename_of(std::string_view path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool starts_with_any(std::string_view name, std::initializer_list<std::string_view> prefixes) {
  for (std::string_view p : prefixes) {
    if (name.starts_with(p)) return true;
  }
  return false;
}

// "libfoo.so.1.2" -> "libfoo"; "_C.cpython-311-x86_64-linux-gnu.so" -> "_C"; "train" -> "train".
std::string_view without_suffixes(std::string_view name) {
  for (std::string_view marker : {".so", ".cpython-"}) {
    if (const std::size_t at = name.find(marker); at != std::string_view::npos && at > 0)
      name = name.substr(0, at);
  }
  return name;
}

// The module of `address` among those loaded when the stack was recorded: the latest one that
// covers it, since a library unloaded and replaced at the same addresses is a new record.
const format::ModuleRecord* module_of(const TraceSummary& trace, uint64_t address,
                                      std::size_t epoch) {
  for (std::size_t i = std::min(epoch, trace.modules.size()); i > 0; --i) {
    const format::ModuleRecord& m = trace.modules[i - 1];
    if (address >= m.start && address < m.end) return &m;
  }
  return nullptr;
}

// The interpreter's calling machinery: ctypes (libffi, _ctypes), libpython, a python executable
// with the interpreter linked in. A CUDA call through it was made by the Python code above it.
bool interpreter_machinery(std::string_view path) {
  const std::string_view name = basename_of(path);
  if (starts_with_any(name, {"libffi", "_ctypes", "libpython"}) ||
      path.find("/lib-dynload/") != std::string_view::npos)
    return true;
  if (!name.starts_with("python")) return false;
  return std::all_of(name.begin() + 6, name.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
  });
}

}  // namespace

std::string python_package(std::string_view file) {
  // Frozen modules (importlib's) are the standard library's.
  if (file.starts_with("<frozen ")) return "python";
  for (std::string_view marker : {"/site-packages/", "/dist-packages/"}) {
    const std::size_t at = file.rfind(marker);
    if (at == std::string_view::npos) continue;
    const std::string_view rest = file.substr(at + marker.size());
    const std::string_view top = rest.substr(0, rest.find('/'));
    return std::string(top.substr(0, top.find(".py")));
  }
  // The standard library: .../lib/python3.12/x.py (its packages' own folders excepted above).
  for (std::string_view marker : {"/lib/python", "/lib64/python"}) {
    const std::size_t at = file.find(marker);
    if (at == std::string_view::npos) continue;
    const std::string_view version = file.substr(at + marker.size());
    const std::size_t slash = version.find('/');
    if (slash != std::string_view::npos && slash > 0 &&
        std::all_of(version.begin(), version.begin() + static_cast<std::ptrdiff_t>(slash),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; }))
      return "python";
  }
  return {};
}

std::string library_name(std::string_view module_path) {
  const std::string_view name = basename_of(module_path);
  if (name.starts_with("libnccl")) return "libnccl";
  if (name.starts_with("libcublas")) return "libcublas";
  if (name.starts_with("libcudnn")) return "libcudnn";
  if (starts_with_any(name, {"libc10", "libtorch"})) return "pytorch";
  // JAX's GPU plugin (jax_plugins/xla_cuda12/xla_cuda_plugin.so) holds XLA's allocator.
  if (module_path.find("/jaxlib/") != std::string_view::npos ||
      module_path.find("/jax_plugins/") != std::string_view::npos ||
      module_path.find("/jax_cuda") != std::string_view::npos ||
      starts_with_any(name, {"libxla", "xla_extension", "xla_cuda_plugin", "jaxlib"}))
    return "jax";
  if (module_path.find("/cupy/") != std::string_view::npos ||
      module_path.find("/cupy_backends/") != std::string_view::npos ||
      starts_with_any(name, {"cupy", "libcupy"}))
    return "cupy";
  return std::string(without_suffixes(name));
}

bool passes_allocations_on(std::string_view module_path) {
  const std::string_view name = basename_of(module_path);
  return starts_with_any(name, {"libcuda.so", "libcudart.so", "libgpumemtrace", "ld-linux",
                                "ld-musl", "libc.so", "libc-", "libpthread", "libdl.so"});
}

bool caching_allocator_library(std::string_view library) {
  return library == "pytorch" || library == "jax" || library == "cupy";
}

bool keeps_memory_on_purpose(std::string_view library) {
  return library == "libcublas" || library == "libcudnn" || library == "libnccl" ||
         library == "jax";
}

const char* allocator_library(int allocator) {
  switch (static_cast<format::BlockAllocator>(allocator)) {
    case format::BlockAllocator::kPytorch:
      return "pytorch";
    case format::BlockAllocator::kCupy:
      return "cupy";
    default:
      return nullptr;
  }
}

std::string python_owner(const TraceSummary& trace, uint32_t stack_id) {
  const auto python = trace.python_stacks.find(stack_id);
  if (python == trace.python_stacks.end()) return {};
  for (uint64_t packed : python->second) {
    const auto code = trace.python_code.find(static_cast<uint32_t>(packed >> 32));
    if (code == trace.python_code.end() || code->second.file.empty()) continue;
    const std::string package = python_package(code->second.file);
    if (package == "python") continue;  // the standard library passes the call on
    if (package.empty()) return std::string(basename_of(code->second.file));
    if (package == "torch") return "pytorch";
    if (package == "jax" || package == "jaxlib") return "jax";
    if (package == "cupy" || package == "cupy_backends") return "cupy";
    return package;
  }
  return {};
}

std::string owner_library(const TraceSummary& trace, uint32_t stack_id) {
  const auto stack = trace.stacks.find(stack_id);
  if (stack == trace.stacks.end()) return "unknown";
  const auto epoch = trace.stack_module_epoch.find(stack_id);
  const std::size_t modules =
      epoch != trace.stack_module_epoch.end() ? epoch->second : trace.modules.size();
  for (uint64_t address : stack->second) {
    // A return address: the call itself is the byte before it.
    const format::ModuleRecord* m = module_of(trace, address - 1, modules);
    if (m == nullptr || passes_allocations_on(m->path)) continue;
    if (interpreter_machinery(m->path)) {
      if (std::string owner = python_owner(trace, stack_id); !owner.empty()) return owner;
    }
    // The main program may be recorded without a path: it is named after its argv[0].
    if (m->path.empty()) return trace.argv.empty() ? "unknown" : library_name(trace.argv.front());
    return library_name(m->path);
  }
  return "unknown";
}

OwnerLibraryCache::OwnerLibraryCache(const TraceSummary& trace) : trace_(trace) {
  // A stack id is shared by everything recorded at that stack: stack 0 by everything recorded
  // without one, and with Python frames alone (GPUMEMTRACE_STACKS=python) a line's blocks by the
  // driver allocations of that line (a cuBLAS workspace, the segments). Such a stack says nothing
  // of who allocated, and is left to its frames.
  std::unordered_set<uint32_t> driver_stacks;
  for (const auto& [key, site] : trace.sites) driver_stacks.insert(site.stack);
  for (const auto& [key, site] : trace.block_sites) {
    if (site.stack == 0 || driver_stacks.contains(site.stack)) continue;
    const auto [it, added] = block_allocators_.try_emplace(site.stack, site.allocator);
    if (!added && it->second != site.allocator) it->second = kMixedAllocators;
  }
}

const std::string& OwnerLibraryCache::of(uint32_t stack_id) {
  auto it = owners_.find(stack_id);
  if (it == owners_.end()) it = owners_.emplace(stack_id, owner_of(stack_id)).first;
  return it->second;
}

std::string OwnerLibraryCache::owner_of(uint32_t stack_id) const {
  const auto blocks = block_allocators_.find(stack_id);
  if (blocks != block_allocators_.end()) {
    if (const char* library = allocator_library(static_cast<int>(blocks->second))) return library;
  }
  return owner_library(trace_, stack_id);
}

}  // namespace gmt::analyzer
