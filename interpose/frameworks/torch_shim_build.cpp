// SPDX-License-Identifier: Apache-2.0
#include "interpose/frameworks/torch_shim_build.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "interpose/frameworks/torch_trace_shim_source.h"

extern char** environ;

namespace gmt::interpose {
namespace {

std::string parent_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// "2.11.0+cu130" from torch/version.py's `__version__ = '2.11.0+cu130'`; "unknown" without it.
std::string torch_version(const std::string& torch_root) {
  std::ifstream in(torch_root + "/version.py");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("__version__", 0) != 0) continue;
    const std::size_t open = line.find_first_of("'\"");
    const std::size_t close = line.find_last_of("'\"");
    if (open != std::string::npos && close > open) return line.substr(open + 1, close - open - 1);
  }
  return "unknown";
}

// Which std::string ABI torch was built with, from a symbol of libc10 that takes a string: the
// shim must match it or its TraceEntry and std::function do not link.
int cxx11_abi() {
  void* c10 = dlopen("libc10.so", RTLD_NOLOAD | RTLD_LAZY);
  if (c10 == nullptr) return 1;
  const bool old_abi =
      dlsym(c10, "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs") != nullptr &&
      dlsym(c10,
            "_ZN3c106detail14torchCheckFailEPKcS2_jRKNSt7__cxx1112basic_stringIcSt11char_"
            "traitsIcESaIcEEE") == nullptr;
  dlclose(c10);
  return old_abi ? 0 : 1;
}

// The CUDA runtime's headers, which torch's CUDA headers include.
std::string cuda_include(const std::string& torch_root) {
  std::vector<std::string> candidates;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH", "CUDAToolkit_ROOT"}) {
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0')
      candidates.push_back(std::string(v) + "/include");
  }
  candidates.push_back("/usr/local/cuda/include");
  const std::string site = parent_of(torch_root);
  for (const char* wheel :
       {"nvidia/cu13/include", "nvidia/cuda_runtime/include", "nvidia/cu12/include"})
    candidates.push_back(site + "/" + wheel);
  for (const std::string& dir : candidates) {
    if (exists(dir + "/cuda_runtime_api.h")) return dir;
  }
  return {};
}

std::string find_compiler() {
  if (const char* cxx = std::getenv("GPUMEMTRACE_CXX"); cxx != nullptr && *cxx != '\0') {
    return cxx;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  std::vector<std::string> dirs_list;
  while (std::getline(dirs, dir, ':')) dirs_list.push_back(dir.empty() ? "." : dir);
  for (const char* name : {"c++", "g++", "clang++"}) {
    for (const std::string& d : dirs_list) {
      const std::string candidate = d + "/" + name;
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  return {};
}

std::string cache_dir() {
  if (const char* dir = std::getenv("GPUMEMTRACE_CACHE_DIR"); dir != nullptr && *dir != '\0')
    return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
    return std::string(xdg) + "/gpumemtrace";
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return std::string(home) + "/.cache/gpumemtrace";
  return {};
}

bool make_dirs(const std::string& dir) {
  if (dir.empty()) return false;
  if (exists(dir)) return true;
  if (!make_dirs(parent_of(dir))) return false;
  return mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST;
}

uint64_t fnv1a(const std::string& text, uint64_t hash = 1469598103934665603ull) {
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

// The environment without LD_PRELOAD: the compiler is not a process to trace.
std::vector<char*> compiler_environment() {
  std::vector<char*> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0) env.push_back(*e);
  }
  env.push_back(nullptr);
  return env;
}

// The compiler's last line of complaint, for the note.
std::string last_line(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last.substr(0, 300);
}

std::string compile(const std::string& compiler, const std::vector<std::string>& args,
                    const std::string& log) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(compiler.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> env = compiler_environment();
  pid_t pid = 0;
  const int spawned =
      posix_spawn(&pid, compiler.c_str(), &actions, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return "cannot run " + compiler + ": " + std::strerror(spawned);
  int status = 0;
  pid_t waited;
  do {
    waited = waitpid(pid, &status, 0);
  } while (waited < 0 && errno == EINTR);
  // A program that ignores SIGCHLD, or reaps every child itself, leaves us no status: the
  // output file says whether the compiler succeeded.
  if (waited == pid && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    return compiler + " failed (" + log + "): " + last_line(log);
  }
  return {};
}

}  // namespace

TorchShim build_torch_shim(const std::string& c10_cuda) {
  TorchShim shim;
  const std::string torch_lib = parent_of(c10_cuda);
  const std::string torch_root = parent_of(torch_lib);
  shim.version = torch_version(torch_root);
  const std::string include = torch_root + "/include";
  if (!exists(include + "/c10/cuda/CUDACachingAllocator.h")) {
    shim.error = "torch's C++ headers are not installed (" + include + ")";
    return shim;
  }
  const int abi = cxx11_abi();
  struct stat lib_stat {};
  stat(c10_cuda.c_str(), &lib_stat);
  const uint64_t key =
      fnv1a(kTorchTraceShimSource,
            fnv1a(shim.version + '\n' + std::to_string(abi) + '\n' + c10_cuda + '\n' +
                  std::to_string(lib_stat.st_size) + '\n' + std::to_string(lib_stat.st_mtime)));
  const std::string dir = cache_dir();
  if (!make_dirs(dir)) {
    shim.error = "no cache folder for the shim (" + (dir.empty() ? "HOME is not set" : dir) + ")";
    return shim;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(key));
  const std::string stem = dir + "/torch-tracker-" + hex;
  shim.library = stem + ".so";
  if (exists(shim.library)) return shim;

  // One process builds; the others wait for it and find the library.
  const int lock = open((stem + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock >= 0) flock(lock, LOCK_EX);
  if (!exists(shim.library)) {
    const std::string compiler = find_compiler();
    const std::string cuda = cuda_include(torch_root);
    if (compiler.empty()) {
      shim.error = "no C++ compiler (c++, g++ or clang++ on PATH, or GPUMEMTRACE_CXX)";
    } else if (cuda.empty()) {
      shim.error = "the CUDA runtime's headers were not found (set CUDA_HOME)";
    } else {
      const std::string source = stem + ".cpp";
      std::ofstream(source, std::ios::binary | std::ios::trunc) << kTorchTraceShimSource;
      const std::string partial = stem + ".so." + std::to_string(getpid());
      shim.error =
          compile(compiler,
                  {"-shared", "-fPIC", "-O2", "-std=c++17",
                   "-D_GLIBCXX_USE_CXX11_ABI=" + std::to_string(abi), "-I" + include,
                   "-I" + include + "/torch/csrc/api/include", "-I" + cuda, source, "-o", partial,
                   "-L" + torch_lib, "-lc10_cuda", "-lc10", "-Wl,-rpath," + torch_lib},
                  stem + ".log");
      if (shim.error.empty() && rename(partial.c_str(), shim.library.c_str()) != 0) {
        shim.error = "cannot keep the shim at " + shim.library + ": " + std::strerror(errno);
      }
      unlink(partial.c_str());
    }
  }
  if (lock >= 0) close(lock);  // releases the lock
  if (!shim.error.empty()) shim.library.clear();
  return shim;
}

}  // namespace gmt::interpose
