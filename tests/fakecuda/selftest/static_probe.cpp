// SPDX-License-Identifier: Apache-2.0
// A program linked with the static fake runtime only (no libcuda at load time); run by
// probes_test.cpp. Checks that the driver is loaded by dlopen at the first runtime call, and
// that NVML (dlopened here, as profilers do) sees this process only once it uses the GPU.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>

#include "nvml/nvml_api.h"

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "static probe: %s failed\n", what);
    ++failures;
  }
}

bool driver_loaded() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
  if (driver != nullptr) dlclose(driver);
  return driver != nullptr;
}

struct Nvml {
  decltype(&nvmlInit_v2) init;
  decltype(&nvmlDeviceGetHandleByIndex_v2) handle_by_index;
  decltype(&nvmlDeviceGetComputeRunningProcesses_v3) processes;
};

// (pid, used bytes) of this process on device 0, or {0, 0} when not listed.
nvmlProcessInfo_t this_process(const Nvml& nvml) {
  nvmlDevice_t device = nullptr;
  nvml.handle_by_index(0, &device);
  nvmlProcessInfo_t infos[4];
  unsigned count = 4;
  nvml.processes(device, &count, infos);
  for (unsigned i = 0; i < count; ++i) {
    if (infos[i].pid == static_cast<unsigned>(getpid())) return infos[i];
  }
  return nvmlProcessInfo_t{0, 0, 0, 0};
}

}  // namespace

int main() {
  check(!driver_loaded(), "libcuda not loaded before the first call");
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  check(library != nullptr, "dlopen libnvidia-ml.so.1");
  if (library == nullptr) return 1;
  Nvml nvml{reinterpret_cast<decltype(&nvmlInit_v2)>(dlsym(library, "nvmlInit_v2")),
            reinterpret_cast<decltype(&nvmlDeviceGetHandleByIndex_v2)>(
                dlsym(library, "nvmlDeviceGetHandleByIndex_v2")),
            reinterpret_cast<decltype(&nvmlDeviceGetComputeRunningProcesses_v3)>(
                dlsym(library, "nvmlDeviceGetComputeRunningProcesses_v3"))};
  check(nvml.init() == NVML_SUCCESS, "nvmlInit_v2");
  check(this_process(nvml).pid == 0, "not listed before using CUDA");

  void* p = nullptr;
  check(cudaMalloc(&p, 1 << 20) == cudaSuccess, "cudaMalloc");
  check(driver_loaded(), "libcuda loaded by the first call");
  nvmlProcessInfo_t mine = this_process(nvml);
  check(mine.pid == static_cast<unsigned>(getpid()), "listed after cudaMalloc");
  check(mine.usedGpuMemory == 512ull * 1024 * 1024 + (1 << 20), "context overhead + 1 MiB");
  check(cudaFree(p) == cudaSuccess, "cudaFree");
  if (failures == 0) std::printf("static probe OK\n");
  return failures == 0 ? 0 : 1;
}
