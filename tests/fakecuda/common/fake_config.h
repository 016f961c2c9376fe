// SPDX-License-Identifier: Apache-2.0
// The simulated machine, read from FAKECUDA_* environment variables.
//
// Shared by the fake driver and the fake NVML (each library compiles its own copy), so both see
// the same devices, capacities and PCI bus ids without NVML depending on libcuda at link time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fakecuda {

// PCI bus numbers are 0x10, 0x20, ... 0xF0, so at most 15 simulated devices.
inline constexpr int kMaxDevices = 15;

struct FakeConfig {
  // Physical devices, in PCI order (what NVML enumerates).
  int physical_device_count = 1;
  std::vector<uint64_t> device_memory;         // per physical device
  std::vector<uint64_t> other_process_memory;  // per physical device
  uint64_t context_overhead = 0;
  unsigned other_process_pid = 1;
  // CUDA ordinal -> physical index, after CUDA_VISIBLE_DEVICES.
  std::vector<int> visible;
};

// Reads FAKECUDA_DEVICE_COUNT, FAKECUDA_DEVICE_MEMORY, FAKECUDA_CONTEXT_OVERHEAD,
// FAKECUDA_OTHER_PROCESS_MEMORY, FAKECUDA_OTHER_PROCESS_PID and CUDA_VISIBLE_DEVICES.
FakeConfig load_config_from_env();

// Byte counts accept an optional binary suffix: "16G", "512M", "4096K", "1T"; plain numbers are
// bytes. Returns false on anything else.
bool parse_byte_count(const std::string& text, uint64_t* out);

// The deterministic PCI location of a physical device: domain 0, bus 0x10 * (index + 1), device 0.
unsigned pci_bus_number(int physical);
// "0000:10:00.0", the form cuDeviceGetPCIBusId returns.
std::string pci_bus_id(int physical);

// 16 UUID bytes, identical in the driver (cuDeviceGetUuid) and NVML (nvmlDeviceGetUUID).
void device_uuid_bytes(int physical, unsigned char out[16]);

// One product name for every simulated device.
inline constexpr const char* kDeviceName = "FakeCUDA Simulated GPU";

}  // namespace fakecuda
