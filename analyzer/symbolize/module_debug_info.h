// SPDX-License-Identifier: Apache-2.0
// One module's ELF file opened with libdwfl, checked against the build-id the traced process
// recorded. The file is reported at bias 0, so its addresses are the file's own virtual
// addresses (runtime address - load base): the same opened file serves every place the module
// was loaded at, in any number of traces.
#pragma once

#include <elfutils/libdwfl.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/symbolize/inline_frames.h"
#include "analyzer/symbolize/symbolizer.h"

namespace gmt::analyzer::symbolize {

class ModuleDebugInfo {
 public:
  // Opens `path`. `expected_build_id` is the lowercase hex the traced process recorded; when it
  // is "" (the module had none) there is nothing to check against and the file is used as is.
  ModuleDebugInfo(const std::string& path, const std::string& expected_build_id);
  ~ModuleDebugInfo();
  ModuleDebugInfo(const ModuleDebugInfo&) = delete;
  ModuleDebugInfo& operator=(const ModuleDebugInfo&) = delete;

  // False when the file cannot be used (missing, not ELF, another build); problem() says why.
  bool usable() const { return module_ != nullptr; }
  const std::string& problem() const { return problem_; }

  // The inline chain at a file virtual address, innermost first, with `module` left empty and
  // `function` empty where nothing names the code. Empty when the module is not usable.
  // Thread-safe: libdwfl's handle is used by one thread at a time, and each address is looked
  // up once for every trace and thread that shares this module (shared_module_debug_info).
  std::vector<SymbolizedFrame> frames_at(uint64_t file_address);

 private:
  std::mutex mutex_;  // guards the libdwfl handle, the indexes and `frames_`
  std::unordered_map<uint64_t, std::vector<SymbolizedFrame>> frames_;
  Dwfl* dwfl_ = nullptr;
  Dwfl_Module* module_ = nullptr;
  std::string problem_;
  std::unique_ptr<ModuleIndexes> indexes_;  // once the module is usable
};

// The process-wide instance for a recorded module: every trace (and every thread) that loaded
// the same file shares one opened, indexed copy. Matched by build-id and path when the module
// has a build-id, else by path, size and modification time. Not by build-id alone: another path
// with the same build-id may be a stripped copy, and a trace's frames would then depend on
// which trace was read first. Files that cannot be used are remembered as such. Thread-safe.
std::shared_ptr<ModuleDebugInfo> shared_module_debug_info(const std::string& path,
                                                          const std::string& build_id);

}  // namespace gmt::analyzer::symbolize
