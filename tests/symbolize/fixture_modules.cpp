// SPDX-License-Identifier: Apache-2.0
#include "tests/symbolize/fixture_modules.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <cstring>

namespace gmt_fixture {
namespace {

std::string to_hex(const unsigned char* bytes, size_t length) {
  static const char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (size_t i = 0; i < length; ++i) {
    hex += kDigits[bytes[i] >> 4];
    hex += kDigits[bytes[i] & 0xf];
  }
  return hex;
}

size_t align4(size_t size) {
  return (size + 3) & ~size_t{3};
}

// The NT_GNU_BUILD_ID note of a loaded module, read from its PT_NOTE segments in memory (the
// note is in an allocated section, so it is mapped).
std::string build_id(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_NOTE) continue;
    const auto* notes = reinterpret_cast<const unsigned char*>(info->dlpi_addr + segment.p_vaddr);
    size_t offset = 0;
    while (offset + sizeof(ElfW(Nhdr)) <= segment.p_memsz) {
      ElfW(Nhdr) header;
      std::memcpy(&header, notes + offset, sizeof header);
      const size_t name_at = offset + sizeof header;
      const size_t desc_at = name_at + align4(header.n_namesz);
      const size_t next = desc_at + align4(header.n_descsz);
      if (next > segment.p_memsz) break;
      if (header.n_type == NT_GNU_BUILD_ID && header.n_namesz == 4 &&
          std::memcmp(notes + name_at, "GNU", 4) == 0) {
        return to_hex(notes + desc_at, header.n_descsz);
      }
      offset = next;
    }
  }
  return {};
}

std::string executable_path() {
  char path[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
  return length > 0 ? std::string(path, static_cast<size_t>(length)) : std::string();
}

int add_module(dl_phdr_info* info, size_t, void* data) {
  LoadedModule module;
  module.path = info->dlpi_name != nullptr ? info->dlpi_name : "";
  if (module.path.empty()) module.path = executable_path();
  module.load_base = info->dlpi_addr;
  bool first = true;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) continue;
    const uint64_t start = info->dlpi_addr + segment.p_vaddr;
    const uint64_t end = start + segment.p_memsz;
    if (first || start < module.start) module.start = start;
    if (first || end > module.end) module.end = end;
    first = false;
  }
  module.build_id = build_id(info);
  static_cast<std::vector<LoadedModule>*>(data)->push_back(std::move(module));
  return 0;
}

}  // namespace

std::vector<LoadedModule> loaded_modules() {
  std::vector<LoadedModule> modules;
  dl_iterate_phdr(add_module, &modules);
  return modules;
}

}  // namespace gmt_fixture
