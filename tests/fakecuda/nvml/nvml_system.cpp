// SPDX-License-Identifier: Apache-2.0
// NVML library lifetime and system queries.
#include <cstdio>
#include <cstring>

#include "nvml/nvml_state.h"

using namespace fakecuda::nvml;

namespace {

constexpr const char* kDriverVersion = "580.00.00-fakecuda";

nvmlReturn_t copy_string(const char* text, char* out, unsigned int length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (std::strlen(text) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, text, std::strlen(text) + 1);
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

// Reference counted like the real library; the configuration is read when the count leaves 0.
nvmlReturn_t nvmlInit_v2(void) {
  NvmlState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.init_count++ == 0) {
    s.config = fakecuda::load_config_from_env();
    for (int i = 0; i < fakecuda::kMaxDevices; ++i) s.devices[i].physical = i;
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit(void) {
  return nvmlInit_v2();
}

nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
  (void)flags;
  return nvmlInit_v2();
}

nvmlReturn_t nvmlShutdown(void) {
  NvmlState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  --s.init_count;
  return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "Argument Version Mismatch";
    case NVML_ERROR_UNKNOWN:
      return "Unknown Error";
    default:
      return "Unknown Error";
  }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  NvmlState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  return copy_string(kDriverVersion, version, length);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion) {
  if (cudaDriverVersion == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *cudaDriverVersion = 13000;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion) {
  return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}

}  // extern "C"
