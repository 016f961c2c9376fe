// SPDX-License-Identifier: Apache-2.0
#include "common/fake_config.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace fakecuda {
namespace {

constexpr uint64_t kDefaultDeviceMemory = 17179869184ull;   // 16 GiB
constexpr uint64_t kDefaultContextOverhead = 536870912ull;  // 512 MiB

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, ',')) parts.push_back(part);
  return parts;
}

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

void warn(const char* variable, const char* value) {
  std::fprintf(stderr, "fakecuda: ignoring invalid %s='%s'\n", variable, value);
}

uint64_t byte_count_from_env(const char* variable, uint64_t fallback) {
  const char* value = std::getenv(variable);
  if (value == nullptr || *value == '\0') return fallback;
  uint64_t bytes = 0;
  if (parse_byte_count(trim(value), &bytes)) return bytes;
  warn(variable, value);
  return fallback;
}

// "a,b,c" gives one value per device; a shorter list repeats its last value for the remaining
// devices, so a single number applies to every device.
std::vector<uint64_t> per_device_from_env(const char* variable, uint64_t fallback, int count) {
  std::vector<uint64_t> values(static_cast<size_t>(count), fallback);
  const char* value = std::getenv(variable);
  if (value == nullptr || *value == '\0') return values;
  std::vector<uint64_t> listed;
  for (const std::string& part : split_commas(value)) {
    uint64_t bytes = 0;
    if (!parse_byte_count(trim(part), &bytes)) {
      warn(variable, value);
      return values;
    }
    listed.push_back(bytes);
  }
  if (listed.empty()) return values;
  for (size_t i = 0; i < values.size(); ++i) values[i] = listed[std::min(i, listed.size() - 1)];
  return values;
}

// Like the real driver: a comma list of physical indices, read up to the first invalid or
// repeated entry; unset means every device in PCI order. (UUID entries are not supported.)
std::vector<int> visible_devices_from_env(int count) {
  std::vector<int> visible;
  const char* value = std::getenv("CUDA_VISIBLE_DEVICES");
  if (value == nullptr) {
    for (int i = 0; i < count; ++i) visible.push_back(i);
    return visible;
  }
  for (const std::string& raw : split_commas(value)) {
    std::string part = trim(raw);
    char* end = nullptr;
    long index = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || index < 0 || index >= count) break;
    bool repeated = false;
    for (int seen : visible) repeated = repeated || seen == index;
    if (repeated) break;
    visible.push_back(static_cast<int>(index));
  }
  return visible;
}

}  // namespace

bool parse_byte_count(const std::string& text, uint64_t* out) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0) return false;
  std::string suffix = end;
  unsigned shift = 0;
  if (suffix.empty() || suffix == "B") {
    shift = 0;
  } else if (suffix == "K" || suffix == "KiB") {
    shift = 10;
  } else if (suffix == "M" || suffix == "MiB") {
    shift = 20;
  } else if (suffix == "G" || suffix == "GiB") {
    shift = 30;
  } else if (suffix == "T" || suffix == "TiB") {
    shift = 40;
  } else {
    return false;
  }
  if (shift != 0 && value > (~0ull >> shift)) return false;
  *out = value << shift;
  return true;
}

FakeConfig load_config_from_env() {
  FakeConfig config;
  const char* count_text = std::getenv("FAKECUDA_DEVICE_COUNT");
  if (count_text != nullptr && *count_text != '\0') {
    char* end = nullptr;
    long count = std::strtol(count_text, &end, 10);
    if (*end != '\0' || count < 0 || count > kMaxDevices) {
      warn("FAKECUDA_DEVICE_COUNT", count_text);
    } else {
      config.physical_device_count = static_cast<int>(count);
    }
  }
  int count = config.physical_device_count;
  config.device_memory = per_device_from_env("FAKECUDA_DEVICE_MEMORY", kDefaultDeviceMemory, count);
  config.other_process_memory = per_device_from_env("FAKECUDA_OTHER_PROCESS_MEMORY", 0, count);
  config.context_overhead =
      byte_count_from_env("FAKECUDA_CONTEXT_OVERHEAD", kDefaultContextOverhead);
  const char* pid_text = std::getenv("FAKECUDA_OTHER_PROCESS_PID");
  if (pid_text != nullptr && *pid_text != '\0') {
    char* end = nullptr;
    unsigned long pid = std::strtoul(pid_text, &end, 10);
    if (*end != '\0' || pid == 0 || pid > 0xffffffffu) {
      warn("FAKECUDA_OTHER_PROCESS_PID", pid_text);
    } else {
      config.other_process_pid = static_cast<unsigned>(pid);
    }
  }
  config.visible = visible_devices_from_env(count);
  return config;
}

unsigned pci_bus_number(int physical) {
  return 0x10u * static_cast<unsigned>(physical + 1);
}

std::string pci_bus_id(int physical) {
  char text[32];
  std::snprintf(text, sizeof text, "0000:%02X:00.0", pci_bus_number(physical));
  return text;
}

void device_uuid_bytes(int physical, unsigned char out[16]) {
  static const unsigned char kPrefix[15] = {0xfa, 0xce, 0xc0, 0xda, 0x00, 0x00, 0x40, 0x00,
                                            0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  std::memcpy(out, kPrefix, sizeof kPrefix);
  out[15] = static_cast<unsigned char>(physical);
}

}  // namespace fakecuda
