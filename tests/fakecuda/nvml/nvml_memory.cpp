// SPDX-License-Identifier: Apache-2.0
// Device memory as NVML reports it: device-wide totals that include "other processes", and
// the per-process list (this process, read from the fake driver, plus one synthetic other
// process when FAKECUDA_OTHER_PROCESS_MEMORY is set).
#include <unistd.h>

#include <vector>

#include "nvml/nvml_state.h"

using namespace fakecuda::nvml;

namespace {

struct DeviceMemory {
  unsigned long long total = 0;
  unsigned long long used = 0;
  unsigned long long free = 0;
};

DeviceMemory device_memory(const NvmlState& s, int physical) {
  DeviceMemory memory;
  memory.total = s.config.device_memory[static_cast<size_t>(physical)];
  std::optional<ProcessUsage> mine = this_process_usage(s, physical);
  memory.used =
      s.config.other_process_memory[static_cast<size_t>(physical)] + (mine ? mine->used_bytes : 0);
  memory.free = memory.used >= memory.total ? 0 : memory.total - memory.used;
  return memory;
}

// A process is listed while it has a context or memory on the device.
std::vector<nvmlProcessInfo_t> processes(const NvmlState& s, int physical) {
  std::vector<nvmlProcessInfo_t> list;
  if (std::optional<ProcessUsage> mine = this_process_usage(s, physical);
      mine && (mine->live_contexts > 0 || mine->used_bytes > 0)) {
    list.push_back({static_cast<unsigned>(getpid()), mine->used_bytes, 0xFFFFFFFFu, 0xFFFFFFFFu});
  }
  unsigned long long other = s.config.other_process_memory[static_cast<size_t>(physical)];
  if (other > 0) list.push_back({s.config.other_process_pid, other, 0xFFFFFFFFu, 0xFFFFFFFFu});
  return list;
}

// NVML's convention: too small a buffer answers INSUFFICIENT_SIZE with the needed count.
template <typename Info, typename Convert>
nvmlReturn_t running_processes(nvmlDevice_t device, unsigned int* infoCount, Info* infos,
                               Convert convert) {
  if (infoCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  NvmlState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (nvmlReturn_t r = check_device(s, device); r != NVML_SUCCESS) return r;
  std::vector<nvmlProcessInfo_t> list = processes(s, device->physical);
  unsigned needed = static_cast<unsigned>(list.size());
  if (*infoCount < needed) {
    *infoCount = needed;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (needed > 0 && infos == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < needed; ++i) infos[i] = convert(list[i]);
  *infoCount = needed;
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  NvmlState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (nvmlReturn_t r = check_device(s, device); r != NVML_SUCCESS) return r;
  DeviceMemory m = device_memory(s, device->physical);
  *memory = nvmlMemory_t{m.total, m.free, m.used};
  return NVML_SUCCESS;
}

// The simulated device reserves nothing for the driver or firmware.
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  NvmlState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (nvmlReturn_t r = check_device(s, device); r != NVML_SUCCESS) return r;
  DeviceMemory m = device_memory(s, device->physical);
  memory->total = m.total;
  memory->reserved = 0;
  memory->free = m.free;
  memory->used = m.used;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos) {
  return running_processes(device, infoCount, infos,
                           [](const nvmlProcessInfo_t& info) { return info; });
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_v2_t* infos) {
  return running_processes(device, infoCount, infos,
                           [](const nvmlProcessInfo_t& info) { return info; });
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                  nvmlProcessInfo_v1_t* infos) {
  return running_processes(device, infoCount, infos, [](const nvmlProcessInfo_t& info) {
    return nvmlProcessInfo_v1_t{info.pid, info.usedGpuMemory};
  });
}

}  // extern "C"
