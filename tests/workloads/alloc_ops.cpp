// SPDX-License-Identifier: Apache-2.0
// Runs the allocations and frees named on its command line, through one of the paths real
// programs take into the driver (chosen at compile time):
//   GMT_PATH_RUNTIME                    cudaMalloc in libcudart (shared or static)
//   GMT_PATH_DRIVER_LINKED              cuMemAlloc from a program linked with -lcuda
//   GMT_PATH_DRIVER_DLSYM               dlopen(libcuda) + dlsym("cuMemAlloc_v2"), as CuPy and XLA
//   GMT_PATH_DRIVER_PROCADDRESS_11030   "cuGetProcAddress" asked for at 11030 (the 4-argument
//                                       ABI), then everything through it, as JAX does
//
// Operations, in order:
//   device:N            make device N current
//   alloc:SLOT:BYTES    allocate into a named slot (must succeed)
//   free:SLOT           free that slot
//   oom:BYTES           an allocation that must fail
//   threads:T:N:BYTES   T threads each allocate and free BYTES N times, concurrently
//   fork:BYTES          a child process allocates and frees BYTES, then exits; we wait for it
//   trace_maps          print how many mappings of a trace file the process holds
//   phase:NAME          open a phase (gpumemtrace_phase_push; NAME is the rest of the argument)
//   exit:normal|_exit|abort|kill|segv|fault   how the process ends (default: return from main);
//                       segv raises SIGSEGV, fault writes to address 8
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#if defined(GMT_PATH_RUNTIME)
#include <cuda_runtime_api.h>
#else
#include <cuda.h>
#include <cudaTypedefs.h>
#endif

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "alloc_ops: %s\n", what.c_str());
  std::exit(3);
}

#if defined(GMT_PATH_RUNTIME)

void set_device(int device) {
  if (cudaSetDevice(device) != cudaSuccess) die("cudaSetDevice failed");
}
int allocate(unsigned long long* ptr, size_t bytes) {
  void* p = nullptr;
  const int err = cudaMalloc(&p, bytes);
  *ptr = reinterpret_cast<unsigned long long>(p);
  return err;
}
int release(unsigned long long ptr) {
  return cudaFree(reinterpret_cast<void*>(ptr));
}

#else

struct Driver {
  PFN_cuInit_v2000 init;
  PFN_cuDevicePrimaryCtxRetain_v7000 retain;
  PFN_cuCtxSetCurrent_v4000 set_current;
  PFN_cuMemAlloc_v3020 alloc;
  PFN_cuMemFree_v3020 free;
};

Driver load_driver() {
  Driver d{};
#if defined(GMT_PATH_DRIVER_LINKED)
  d = {cuInit, cuDevicePrimaryCtxRetain, cuCtxSetCurrent, cuMemAlloc, cuMemFree};
#else
  void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (libcuda == nullptr) die(std::string("dlopen libcuda.so.1: ") + dlerror());
#if defined(GMT_PATH_DRIVER_DLSYM)
  auto sym = [&](const char* name) {
    void* fn = dlsym(libcuda, name);
    if (fn == nullptr) die(std::string("dlsym ") + name);
    return fn;
  };
  d.init = reinterpret_cast<PFN_cuInit_v2000>(sym("cuInit"));
  d.retain = reinterpret_cast<PFN_cuDevicePrimaryCtxRetain_v7000>(sym("cuDevicePrimaryCtxRetain"));
  d.set_current = reinterpret_cast<PFN_cuCtxSetCurrent_v4000>(sym("cuCtxSetCurrent"));
  d.alloc = reinterpret_cast<PFN_cuMemAlloc_v3020>(sym("cuMemAlloc_v2"));
  d.free = reinterpret_cast<PFN_cuMemFree_v3020>(sym("cuMemFree_v2"));
#elif defined(GMT_PATH_DRIVER_PROCADDRESS_11030)
  auto get_v2 =
      reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(libcuda, "cuGetProcAddress_v2"));
  if (get_v2 == nullptr) die("dlsym cuGetProcAddress_v2");
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status{};
  if (get_v2("cuGetProcAddress", &fn, 11030, 0, &status) != CUDA_SUCCESS || fn == nullptr) {
    die("cuGetProcAddress for itself at 11030");
  }
  auto get = reinterpret_cast<PFN_cuGetProcAddress_v11030>(fn);
  auto proc = [&](const char* name) {
    void* f = nullptr;
    if (get(name, &f, 11030, 0) != CUDA_SUCCESS || f == nullptr)
      die(std::string("cuGetProcAddress ") + name);
    return f;
  };
  d.init = reinterpret_cast<PFN_cuInit_v2000>(proc("cuInit"));
  d.retain = reinterpret_cast<PFN_cuDevicePrimaryCtxRetain_v7000>(proc("cuDevicePrimaryCtxRetain"));
  d.set_current = reinterpret_cast<PFN_cuCtxSetCurrent_v4000>(proc("cuCtxSetCurrent"));
  d.alloc = reinterpret_cast<PFN_cuMemAlloc_v3020>(proc("cuMemAlloc"));
  d.free = reinterpret_cast<PFN_cuMemFree_v3020>(proc("cuMemFree"));
#else
#error "choose a GMT_PATH_* for alloc_ops"
#endif
#endif
  if (d.init(0) != CUDA_SUCCESS) die("cuInit failed");
  return d;
}

const Driver& driver() {
  static const Driver d = load_driver();
  return d;
}

void set_device(int device) {
  CUcontext ctx = nullptr;
  if (driver().retain(&ctx, device) != CUDA_SUCCESS) die("cuDevicePrimaryCtxRetain failed");
  if (driver().set_current(ctx) != CUDA_SUCCESS) die("cuCtxSetCurrent failed");
}
int allocate(unsigned long long* ptr, size_t bytes) {
  CUdeviceptr p = 0;
  const int err = driver().alloc(&p, bytes);
  *ptr = p;
  return err;
}
int release(unsigned long long ptr) {
  return driver().free(ptr);
}

#endif

int g_device = 0;

void alloc_free_loop(int count, size_t bytes) {
  set_device(g_device);  // the current context is per thread
  for (int i = 0; i < count; ++i) {
    unsigned long long p = 0;
    if (allocate(&p, bytes) != 0) die("threaded allocation failed");
    if (release(p) != 0) die("threaded free failed");
  }
}

std::vector<std::string> split(const std::string& op) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t colon; (colon = op.find(':', start)) != std::string::npos; start = colon + 1) {
    parts.push_back(op.substr(start, colon - start));
  }
  parts.push_back(op.substr(start));
  return parts;
}

void finish(const std::string& how) {
  std::fflush(nullptr);
  if (how == "normal") std::exit(0);
  if (how == "_exit") _exit(0);
  if (how == "abort") std::abort();
  if (how == "kill") raise(SIGKILL);
  if (how == "segv") raise(SIGSEGV);
  if (how == "fault") {
    // Address 8, in the page that is never mapped: a fault there, not a null pointer (which
    // UBSan would stop first, with SIGABRT).
    volatile uintptr_t where = 8;  // read back: no compiler reasons about the store
    *reinterpret_cast<volatile int*>(where) = 1;
  }
  die("unknown exit mode " + how);
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, unsigned long long> slots;
  set_device(0);
  for (int i = 1; i < argc; ++i) {
    const std::vector<std::string> op = split(argv[i]);
    const std::string& name = op[0];
    auto arg = [&](std::size_t k) -> const std::string& {
      if (k >= op.size()) die(std::string("missing argument in ") + argv[i]);
      return op[k];
    };
    if (name == "device") {
      g_device = std::stoi(arg(1));
      set_device(g_device);
    } else if (name == "alloc") {
      unsigned long long p = 0;
      if (allocate(&p, std::stoull(arg(2))) != 0) die(std::string("allocation failed: ") + argv[i]);
      slots[arg(1)] = p;
    } else if (name == "free") {
      auto it = slots.find(arg(1));
      if (it == slots.end()) die("no slot " + arg(1));
      if (release(it->second) != 0) die(std::string("free failed: ") + argv[i]);
      slots.erase(it);
    } else if (name == "oom") {
      unsigned long long p = 0;
      if (allocate(&p, std::stoull(arg(1))) == 0)
        die(std::string("allocation should have failed: ") + argv[i]);
    } else if (name == "threads") {
      std::vector<std::thread> threads;
      for (int t = 0; t < std::stoi(arg(1)); ++t) {
        threads.emplace_back([t, count = std::stoi(arg(2)), bytes = std::stoull(arg(3))] {
          // Named, so that the trace can be checked to name its threads.
          pthread_setname_np(pthread_self(), ("worker-" + std::to_string(t)).c_str());
          alloc_free_loop(count, bytes);
        });
      }
      for (auto& t : threads) t.join();
    } else if (name == "fork") {
      const pid_t child = fork();
      if (child < 0) die("fork failed");
      if (child == 0) {
        alloc_free_loop(1, std::stoull(arg(1)));
        std::exit(0);
      }
      int status = 0;
      waitpid(child, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("forked child failed");
    } else if (name == "trace_maps") {
      // How many mappings of a trace file this process holds now (from /proc/self/maps).
      std::FILE* maps = std::fopen("/proc/self/maps", "r");
      int count = 0;
      char line[4096];
      while (maps != nullptr && std::fgets(line, sizeof line, maps) != nullptr) {
        if (std::strstr(line, ".gmt") != nullptr) ++count;
      }
      if (maps != nullptr) std::fclose(maps);
      std::printf("trace_maps=%d\n", count);
      std::fflush(stdout);
    } else if (name == "phase") {
      // Found at run time, as include/gpumemtrace.h finds it: absent without the preload.
      using Push = int (*)(const char*);
      if (auto push = reinterpret_cast<Push>(dlsym(RTLD_DEFAULT, "gpumemtrace_phase_push")))
        push(argv[i] + 6);
    } else if (name == "exit") {
      finish(arg(1));
    } else {
      die(std::string("unknown operation ") + argv[i]);
    }
  }
  return 0;
}
