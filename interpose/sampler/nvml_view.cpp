// SPDX-License-Identifier: Apache-2.0
#include "interpose/sampler/nvml_view.h"

#include <dlfcn.h>

#include <cstdio>
#include <vector>

#include "interpose/common/real_dlsym.h"

namespace gmt::interpose {
namespace {

// The parts of NVML's ABI we use (NVML 11 and later); nvml.h is not needed at build time.
using nvmlReturn_t = int;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kInsufficientSize = 7;
constexpr unsigned long long kValueNotAvailable = ~0ULL;
using nvmlDevice_t = void*;

struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlMemory_v2_t {
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
constexpr unsigned int kMemoryV2Version = sizeof(nvmlMemory_v2_t) | (2u << 24);
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

struct BusAddress {
  unsigned int domain = 0, bus = 0, device = 0;
  bool operator==(const BusAddress&) const = default;
};

bool parse_bus_id(const std::string& text, BusAddress& out) {
  unsigned int function = 0;
  return std::sscanf(text.c_str(), "%x:%x:%x.%x", &out.domain, &out.bus, &out.device, &function) ==
         4;
}

}  // namespace

template <class Fn>
Fn NvmlView::symbol(const char* name) {
  return library_ == nullptr ? nullptr : reinterpret_cast<Fn>(real_dlsym()(library_, name));
}

std::string NvmlView::open() {
  library_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) return "libnvidia-ml.so.1 could not be loaded";
  auto init = symbol<nvmlReturn_t (*)()>("nvmlInit_v2");
  if (init == nullptr) return "libnvidia-ml.so.1 has no nvmlInit_v2";
  if (const nvmlReturn_t r = init(); r != kSuccess) {
    return "nvmlInit_v2 failed with error " + std::to_string(r);
  }
  available_ = true;
  return {};
}

NvmlView::Device NvmlView::find(const std::string& pci_bus_id) {
  Device found;
  BusAddress wanted;
  if (!available_ || !parse_bus_id(pci_bus_id, wanted)) return found;
  auto count = symbol<nvmlReturn_t (*)(unsigned int*)>("nvmlDeviceGetCount_v2");
  auto by_index =
      symbol<nvmlReturn_t (*)(unsigned int, nvmlDevice_t*)>("nvmlDeviceGetHandleByIndex_v2");
  auto pci = symbol<nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*)>("nvmlDeviceGetPciInfo_v3");
  auto name = symbol<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int)>("nvmlDeviceGetName");
  unsigned int n = 0;
  if (count == nullptr || by_index == nullptr || pci == nullptr || count(&n) != kSuccess) {
    return found;
  }
  for (unsigned int i = 0; i < n; ++i) {
    nvmlDevice_t handle = nullptr;
    nvmlPciInfo_t info{};
    if (by_index(i, &handle) != kSuccess || pci(handle, &info) != kSuccess) continue;
    if (BusAddress{info.domain, info.bus, info.device} != wanted) continue;
    found.handle = handle;
    found.index = static_cast<int>(i);
    char text[96] = {};
    if (name != nullptr && name(handle, text, sizeof text) == kSuccess) found.name = text;
    break;
  }
  return found;
}

void NvmlView::read(const Device& device, uint64_t pid, format::SampleRecord& sample,
                    bool& listed) {
  listed = false;
  if (!available_ || device.handle == nullptr) return;
  using format::SampleField;
  auto memory_v2 =
      symbol<nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_v2_t*)>("nvmlDeviceGetMemoryInfo_v2");
  auto memory_v1 = symbol<nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*)>("nvmlDeviceGetMemoryInfo");
  nvmlMemory_v2_t v2{};
  v2.version = kMemoryV2Version;
  nvmlMemory_t v1{};
  if (memory_v2 != nullptr && memory_v2(device.handle, &v2) == kSuccess) {
    sample.nvml_device_used = v2.used;
    sample.nvml_device_total = v2.total;
    sample.nvml_device_reserved = v2.reserved;
    sample.present |= SampleField::kNvmlDeviceUsed | SampleField::kNvmlDeviceTotal |
                      SampleField::kNvmlDeviceReserved;
  } else if (memory_v1 != nullptr && memory_v1(device.handle, &v1) == kSuccess) {
    sample.nvml_device_used = v1.used;
    sample.nvml_device_total = v1.total;
    sample.present |= SampleField::kNvmlDeviceUsed | SampleField::kNvmlDeviceTotal;
  }

  auto processes = symbol<nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*)>(
      "nvmlDeviceGetComputeRunningProcesses_v3");
  if (processes == nullptr) return;
  std::vector<nvmlProcessInfo_t> infos(64);
  unsigned int n = static_cast<unsigned int>(infos.size());
  nvmlReturn_t r = processes(device.handle, &n, infos.data());
  if (r == kInsufficientSize && n <= 4096) {  // more processes than we guessed: ask again
    infos.resize(n + 16);
    n = static_cast<unsigned int>(infos.size());
    r = processes(device.handle, &n, infos.data());
  }
  if (r != kSuccess) return;
  uint64_t others = 0;
  bool others_known = true;
  for (unsigned int i = 0; i < n && i < infos.size(); ++i) {
    const nvmlProcessInfo_t& p = infos[i];
    if (p.pid == pid) {
      listed = true;
      if (p.usedGpuMemory != kValueNotAvailable) {
        sample.nvml_process_used = p.usedGpuMemory;
        sample.present |= SampleField::kNvmlProcessUsed;
      }
    } else if (p.usedGpuMemory == kValueNotAvailable) {
      others_known = false;
    } else {
      others += p.usedGpuMemory;
    }
  }
  // Without our own entry (another PID namespace), we cannot tell ours from theirs.
  if (listed && others_known) {
    sample.nvml_other_processes = others;
    sample.present |= SampleField::kNvmlOtherProcesses;
  }
}

}  // namespace gmt::interpose
