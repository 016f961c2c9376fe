// SPDX-License-Identifier: Apache-2.0
// NVML device enumeration and identity: PCI order, ignoring CUDA_VISIBLE_DEVICES (match with
// CUDA devices by PCI bus id, as on a real machine).
#include <cstdio>
#include <cstring>
#include <string>

#include "nvml/nvml_state.h"

using namespace fakecuda::nvml;

namespace {

nvmlReturn_t copy_string(const std::string& text, char* out, unsigned int length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (text.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return NVML_SUCCESS;
}

std::string uuid_string(int physical) {
  unsigned char b[16];
  fakecuda::device_uuid_bytes(physical, b);
  char text[48];
  std::snprintf(text, sizeof text,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return text;
}

nvmlReturn_t handle_by_index(unsigned int index, nvmlDevice_t* device) {
  if (device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  NvmlState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (index >= static_cast<unsigned>(s.config.physical_device_count)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *device = &s.devices[index];
  return NVML_SUCCESS;
}

// Accepts any domain width ("0000:10:00.0" from CUDA, "00000000:10:00.0" from NVML).
nvmlReturn_t handle_by_pci_bus_id(const char* pciBusId, nvmlDevice_t* device) {
  if (pciBusId == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned domain = 0, bus = 0, slot = 0, function = 0;
  if (std::sscanf(pciBusId, "%x:%x:%x.%x", &domain, &bus, &slot, &function) != 4) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  NvmlState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  for (int i = 0; i < s.config.physical_device_count; ++i) {
    if (domain == 0 && slot == 0 && function == 0 && bus == fakecuda::pci_bus_number(i)) {
      *device = &s.devices[i];
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t device_count(unsigned int* deviceCount) {
  if (deviceCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  NvmlState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  *deviceCount = static_cast<unsigned>(s.config.physical_device_count);
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  return device_count(deviceCount);
}
nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount) {
  return device_count(deviceCount);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  return handle_by_index(index, device);
}
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return handle_by_index(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId, nvmlDevice_t* device) {
  return handle_by_pci_bus_id(pciBusId, device);
}
nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* pciBusId, nvmlDevice_t* device) {
  return handle_by_pci_bus_id(pciBusId, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  NvmlState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  for (int i = 0; i < s.config.physical_device_count; ++i) {
    if (uuid_string(i) == uuid) {
      *device = &s.devices[i];
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  if (index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  NvmlState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (nvmlReturn_t r = check_device(s, device); r != NVML_SUCCESS) return r;
  *index = static_cast<unsigned>(device->physical);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  NvmlState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (nvmlReturn_t r = check_device(s, device); r != NVML_SUCCESS) return r;
  return copy_string(fakecuda::kDeviceName, name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  NvmlState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (nvmlReturn_t r = check_device(s, device); r != NVML_SUCCESS) return r;
  return copy_string(uuid_string(device->physical), uuid, length);
}

// An H200's ids: device 0x2335, vendor 0x10de.
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  NvmlState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (nvmlReturn_t r = check_device(s, device); r != NVML_SUCCESS) return r;
  *pci = nvmlPciInfo_t{};
  pci->domain = 0;
  pci->bus = fakecuda::pci_bus_number(device->physical);
  pci->device = 0;
  pci->pciDeviceId = 0x233510de;
  pci->pciSubSystemId = 0x18f210de;
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", pci->domain,
                pci->bus, pci->device);
  std::snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.0", pci->domain, pci->bus,
                pci->device);
  return NVML_SUCCESS;
}

}  // extern "C"
