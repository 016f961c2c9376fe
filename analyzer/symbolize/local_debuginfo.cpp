// SPDX-License-Identifier: Apache-2.0
#include "analyzer/symbolize/local_debuginfo.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace gmt::analyzer::symbolize {
namespace {

// True when the ELF file open on `fd` carries exactly this build-id.
bool has_build_id(int fd, const unsigned char* bits, int length) {
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr) return false;
  const void* found = nullptr;
  const ssize_t found_length = dwelf_elf_gnu_build_id(elf, &found);
  const bool same = found_length == length && std::memcmp(found, bits, length) == 0;
  elf_end(elf);
  return same;
}

// Opens `path` when it is a regular file (a FIFO would block the open) with the build-id wanted.
int open_matching(const std::string& path, const unsigned char* bits, int length) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  if (has_build_id(fd, bits, length)) return fd;
  close(fd);
  return -1;
}

// Returns an open fd and sets `found` to the file's path, or -1.
int find_by_debuglink(Dwfl_Module* module, const char* file_name, const char* debuglink,
                      std::string& found) {
  if (file_name == nullptr || debuglink == nullptr || debuglink[0] == '\0') return -1;
  const unsigned char* bits = nullptr;
  GElf_Addr note_address = 0;
  const int length = dwfl_module_build_id(module, &bits, &note_address);
  if (length <= 0) return -1;

  namespace fs = std::filesystem;
  std::error_code error;
  fs::path file = fs::canonical(file_name, error);
  if (error) file = fs::absolute(file_name, error);
  if (error) return -1;
  const fs::path folder = file.parent_path();
  const fs::path link(debuglink);
  std::vector<fs::path> candidates;
  if (link.is_absolute()) {
    candidates.push_back(link);
  } else {
    candidates.push_back(folder / link);
    candidates.push_back(folder / ".debug" / link);
    candidates.push_back(fs::path("/usr/lib/debug") / folder.relative_path() / link);
  }
  for (const fs::path& candidate : candidates) {
    // The debuglink may name the file itself; it has no debug info, or it would not be asked.
    if (fs::equivalent(candidate, file, error)) continue;
    const int fd = open_matching(candidate.string(), bits, length);
    if (fd >= 0) {
      found = candidate.string();
      return fd;
    }
  }
  return -1;
}

}  // namespace

int find_local_debuginfo(Dwfl_Module* module, void** userdata, const char* module_name,
                         Dwarf_Addr base, const char* file_name, const char* debuglink_file,
                         GElf_Word debuglink_crc, char** debuginfo_file_name) {
  // The build-id tree first: it is what distribution debug packages install, and the same call
  // finds the dwz alternate file (.gnu_debugaltlink) once the main debug file is loaded. This
  // elfutils function is local only (debuginfod is reached from dwfl_standard_find_debuginfo).
  int fd = dwfl_build_id_find_debuginfo(module, userdata, module_name, base, file_name,
                                        debuglink_file, debuglink_crc, debuginfo_file_name);
  if (fd >= 0) return fd;
  std::string found;
  fd = find_by_debuglink(module, file_name, debuglink_file, found);
  if (fd >= 0 && debuginfo_file_name != nullptr) {
    // libdwfl owns the name (it frees it with the module) and resolves dwz alternate files
    // relative to it.
    *debuginfo_file_name = strdup(found.c_str());
  }
  return fd;
}

}  // namespace gmt::analyzer::symbolize
