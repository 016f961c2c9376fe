// SPDX-License-Identifier: Apache-2.0
#include "analyzer/symbolize/module_debug_info.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "analyzer/symbolize/local_debuginfo.h"

namespace gmt::analyzer::symbolize {
namespace {

// The file is handed to libdwfl already open, so it never has to look for the main ELF file.
int no_elf_search(Dwfl_Module*, void**, const char*, Dwarf_Addr, char**, Elf**) {
  return -1;
}

const Dwfl_Callbacks kOfflineCallbacks = {
    .find_elf = no_elf_search,
    .find_debuginfo = find_local_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = nullptr,  // elfutils' default: ":.debug:/usr/lib/debug"
};

std::string to_hex(const unsigned char* bits, int length) {
  static const char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (int i = 0; i < length; ++i) {
    hex += kDigits[bits[i] >> 4];
    hex += kDigits[bits[i] & 0xf];
  }
  return hex;
}

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string dwfl_error() {
  const char* message = dwfl_errmsg(-1);
  return message != nullptr ? message : "unknown libdwfl error";
}

}  // namespace

ModuleDebugInfo::ModuleDebugInfo(const std::string& path, const std::string& expected_build_id) {
  if (path.empty()) {
    problem_ = "no file name was recorded";
    return;
  }
  // A FIFO or a device named by a bogus path would block or misbehave in open(); only regular
  // files can be the ELF that ran.
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    problem_ = std::string("cannot open: ") + std::strerror(errno);
    return;
  }
  if (!S_ISREG(st.st_mode)) {
    problem_ = "not a regular file";
    return;
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    problem_ = std::string("cannot open: ") + std::strerror(errno);
    return;
  }
  dwfl_ = dwfl_begin(&kOfflineCallbacks);
  if (dwfl_ == nullptr) {
    close(fd);
    problem_ = "cannot start libdwfl: " + dwfl_error();
    return;
  }
  dwfl_report_begin(dwfl_);
  // Base 0 with add_p_vaddr: bias 0 for shared objects and executables alike. On success the
  // module owns fd (libdwfl closes it in dwfl_end); on failure it stays ours.
  Dwfl_Module* module = dwfl_report_elf(dwfl_, path.c_str(), path.c_str(), fd, 0, true);
  if (module == nullptr) {
    close(fd);
    problem_ = "not a usable ELF file: " + dwfl_error();
    return;
  }
  dwfl_report_end(dwfl_, nullptr, nullptr);

  const unsigned char* bits = nullptr;
  GElf_Addr note_address = 0;
  const int length = dwfl_module_build_id(module, &bits, &note_address);
  const std::string actual = length > 0 ? to_hex(bits, length) : std::string();
  const std::string expected = lowercase(expected_build_id);
  if (!expected.empty() && actual != expected) {
    // Symbolizing from another build would print plausible but wrong functions and lines.
    problem_ = "build-id mismatch: the process ran build-id " + expected + ", the file has " +
               (actual.empty() ? std::string("none") : actual) +
               " (the file on disk is not the one that ran)";
    return;
  }
  module_ = module;
  indexes_.reset(new ModuleIndexes{FunctionIndex(), SymbolTable(module), UnitIndex()});
}

ModuleDebugInfo::~ModuleDebugInfo() {
  if (dwfl_ != nullptr) dwfl_end(dwfl_);
}

std::vector<SymbolizedFrame> ModuleDebugInfo::frames_at(uint64_t file_address) {
  if (module_ == nullptr) return {};
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = frames_.find(file_address);
  if (found == frames_.end()) {
    found = frames_.emplace(file_address, inline_frames(module_, *indexes_, file_address)).first;
  }
  return found->second;
}

namespace {

// One module of the process-wide cache: opened once, by whichever thread asks first.
struct SharedSlot {
  std::once_flag opened;
  std::shared_ptr<ModuleDebugInfo> debug;
};

std::string file_identity(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return "missing";
  return std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

SharedSlot& opened(SharedSlot& slot, const std::string& path, const std::string& build_id) {
  std::call_once(slot.opened,
                 [&] { slot.debug = std::make_shared<ModuleDebugInfo>(path, build_id); });
  return slot;
}

}  // namespace

std::shared_ptr<ModuleDebugInfo> shared_module_debug_info(const std::string& path,
                                                          const std::string& build_id) {
  static std::mutex mutex;
  // Slots are never removed: a reference to one stays valid without the lock.
  static std::unordered_map<std::string, std::unique_ptr<SharedSlot>> slots;
  const auto slot_for = [&](const std::string& key) -> SharedSlot& {
    std::lock_guard<std::mutex> lock(mutex);
    std::unique_ptr<SharedSlot>& slot = slots[key];
    if (slot == nullptr) slot = std::make_unique<SharedSlot>();
    return *slot;
  };
  // The file at a path with the recorded build-id is the same file for every trace; without a
  // build-id, the same path, size and modification time stand for it.
  const std::string expected = lowercase(build_id);
  const std::string key = expected.empty() ? "path:" + path + '\n' + file_identity(path)
                                           : "build-id:" + expected + '\n' + path;
  return opened(slot_for(key), path, build_id).debug;
}

}  // namespace gmt::analyzer::symbolize
