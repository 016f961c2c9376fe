// SPDX-License-Identifier: Apache-2.0
// NVML: devices in PCI order, per-process usage read from the fake driver, other processes.
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "nvml/nvml_api.h"
#include "selftest/driver_test_support.h"

namespace fakecuda_test {
namespace {

nvmlDevice_t handle(unsigned index) {
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(index, &device), NVML_SUCCESS);
  return device;
}

std::vector<nvmlProcessInfo_t> processes(nvmlDevice_t device) {
  unsigned count = 0;
  nvmlReturn_t r = nvmlDeviceGetComputeRunningProcesses_v3(device, &count, nullptr);
  EXPECT_TRUE(r == NVML_SUCCESS || r == NVML_ERROR_INSUFFICIENT_SIZE) << r;
  std::vector<nvmlProcessInfo_t> list(count);
  EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(device, &count, list.data()), NVML_SUCCESS);
  list.resize(count);
  return list;
}

nvmlMemory_t memory(nvmlDevice_t device) {
  nvmlMemory_t info{};
  EXPECT_EQ(nvmlDeviceGetMemoryInfo(device, &info), NVML_SUCCESS);
  return info;
}

const Env kTwoDevices = {{"FAKECUDA_DEVICE_COUNT", "2"},
                         {"FAKECUDA_DEVICE_MEMORY", "16G"},
                         {"FAKECUDA_CONTEXT_OVERHEAD", "512M"},
                         {"FAKECUDA_OTHER_PROCESS_MEMORY", "1G,0"},
                         {"FAKECUDA_OTHER_PROCESS_PID", "4242"}};

TEST(Nvml, PerProcessAndDeviceArithmetic) {
  run_scenario(kTwoDevices, [] {
    EXPECT_EQ(nvmlDeviceGetCount_v2(nullptr), NVML_ERROR_INVALID_ARGUMENT);
    unsigned count = 0;
    EXPECT_EQ(nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
    ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
    ASSERT_EQ(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
    EXPECT_EQ(count, 2u);
    nvmlDevice_t gpu0 = handle(0), gpu1 = handle(1);

    // The driver is loaded but not initialized: only the other process shows.
    std::vector<nvmlProcessInfo_t> list = processes(gpu0);
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0].pid, 4242u);
    EXPECT_EQ(list[0].usedGpuMemory, kGiB);
    EXPECT_EQ(memory(gpu0).used, kGiB);
    EXPECT_EQ(memory(gpu0).free, 15 * kGiB);
    EXPECT_TRUE(processes(gpu1).empty());

    init_primary(0);
    CUdeviceptr p = 0;
    ASSERT_EQ(cuMemAlloc_v2(&p, 100 * kMiB), CUDA_SUCCESS);
    list = processes(gpu0);
    ASSERT_EQ(list.size(), 2u);
    EXPECT_EQ(list[0].pid, static_cast<unsigned>(getpid()));
    EXPECT_EQ(list[0].usedGpuMemory, 612 * kMiB);
    EXPECT_EQ(list[1].pid, 4242u);
    nvmlMemory_t info = memory(gpu0);
    EXPECT_EQ(info.total, 16 * kGiB);
    EXPECT_EQ(info.used, kGiB + 612 * kMiB);
    EXPECT_EQ(info.free, 16 * kGiB - kGiB - 612 * kMiB);
    nvmlMemory_v2_t info2{};
    info2.version = nvmlMemory_v2;
    ASSERT_EQ(nvmlDeviceGetMemoryInfo_v2(gpu0, &info2), NVML_SUCCESS);
    EXPECT_EQ(info2.used, info.used);
    EXPECT_EQ(info2.reserved, 0u);
    // NVML's used and the driver's free agree.
    EXPECT_EQ(free_bytes(), info.free);
    EXPECT_TRUE(processes(gpu1).empty());
    EXPECT_EQ(memory(gpu1).used, 0u);

    // Too small a buffer: the needed count comes back.
    unsigned small = 1;
    nvmlProcessInfo_t one{};
    EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(gpu0, &small, &one),
              NVML_ERROR_INSUFFICIENT_SIZE);
    EXPECT_EQ(small, 2u);
    EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
    EXPECT_EQ(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
  });
}

TEST(Nvml, PciOrderIgnoresCudaVisibleDevices) {
  Env env = kTwoDevices;
  env.emplace("CUDA_VISIBLE_DEVICES", "1");
  run_scenario(env, [] {
    ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
    unsigned count = 0;
    ASSERT_EQ(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
    EXPECT_EQ(count, 2u);
    nvmlPciInfo_t pci{};
    ASSERT_EQ(nvmlDeviceGetPciInfo_v3(handle(1), &pci), NVML_SUCCESS);
    EXPECT_STREQ(pci.busId, "00000000:20:00.0");
    EXPECT_STREQ(pci.busIdLegacy, "0000:20:00.0");
    EXPECT_EQ(pci.bus, 0x20u);

    // CUDA device 0 is the second physical device; match it by PCI bus id.
    init_primary(0);
    CUdeviceptr p = 0;
    ASSERT_EQ(cuMemAlloc_v2(&p, kMiB), CUDA_SUCCESS);
    char bus_id[32];
    ASSERT_EQ(cuDeviceGetPCIBusId(bus_id, sizeof bus_id, 0), CUDA_SUCCESS);
    EXPECT_STREQ(bus_id, "0000:20:00.0");
    nvmlDevice_t matched = nullptr;
    ASSERT_EQ(nvmlDeviceGetHandleByPciBusId_v2(bus_id, &matched), NVML_SUCCESS);
    EXPECT_EQ(matched, handle(1));
    std::vector<nvmlProcessInfo_t> list = processes(matched);
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0].usedGpuMemory, 512 * kMiB + kMiB);
    EXPECT_EQ(processes(handle(0)).size(), 1u);  // only the other process on GPU 0
    char uuid[NVML_DEVICE_UUID_BUFFER_SIZE];
    ASSERT_EQ(nvmlDeviceGetUUID(matched, uuid, sizeof uuid), NVML_SUCCESS);
    CUuuid cuda_uuid;
    ASSERT_EQ(cuDeviceGetUuid_v2(&cuda_uuid, 0), CUDA_SUCCESS);
    char expected[48];
    const auto* b = reinterpret_cast<const unsigned char*>(cuda_uuid.bytes);
    std::snprintf(expected, sizeof expected,
                  "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                  b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                  b[14], b[15]);
    EXPECT_STREQ(uuid, expected);
    char name[NVML_DEVICE_NAME_BUFFER_SIZE];
    ASSERT_EQ(nvmlDeviceGetName(matched, name, sizeof name), NVML_SUCCESS);
    char cuda_name[64];
    ASSERT_EQ(cuDeviceGetName(cuda_name, sizeof cuda_name, 0), CUDA_SUCCESS);
    EXPECT_STREQ(name, cuda_name);
  });
}

}  // namespace
}  // namespace fakecuda_test
