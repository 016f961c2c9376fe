// SPDX-License-Identifier: Apache-2.0
// Offline symbolization: turns the raw return addresses a traced process recorded into function
// (demangled), file and line, with inlined frames, from the modules (ELF files) it had loaded.
// The traced process never symbolizes (too slow, and unsafe in a hook); it records the modules
// with their load base and GNU build-id, and this class reads their DWARF afterwards with
// elfutils, checking the build-id so that a rebuilt file does not give wrong answers.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace gmt::analyzer {

// A module as recorded in the traced process (one dl_iterate_phdr entry). The fixture of
// tests/symbolize (fixture_modules.cpp) computes it the way the recorder must.
struct ModuleInfo {
  // As the loader reported it (dlpi_name); for the main program, whose dlpi_name is "", the
  // executable's path (readlink("/proc/self/exe")). Relative names (dlopen("./libx.so")) are
  // relative to the traced process's working directory: the recorder should make them absolute.
  std::string path;
  uint64_t load_base = 0;  // dlpi_addr: runtime address = file virtual address + load_base
  // Lowest and highest runtime address of its PT_LOAD segments: [start, end).
  uint64_t start = 0, end = 0;
  std::string build_id;  // lowercase hex of NT_GNU_BUILD_ID; "" if none (the file is not checked)
};

struct SymbolizedFrame {
  std::string function;             // demangled; "<module file name>+0x<hex offset>" when unknown
  std::optional<std::string> file;  // source path as DWARF gives it (absolute where possible)
  std::optional<int> line;
  std::string module;    // module path as recorded ("" for an address in no module)
  bool inlined = false;  // true for frames that were inlined into the next one
};

namespace symbolize {
class ModuleDebugInfo;
}

// Not thread-safe: one instance per thread (each keeps its own caches). The opened modules
// behind it are shared by every instance of the process (by build-id), whatever the thread:
// each file is opened, indexed and each of its addresses looked up once per run.
class Symbolizer {
 public:
  Symbolizer();
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Modules may be added in any order. One whose range overlaps modules added earlier replaces
  // them (dlclose then dlopen at the same place). Files are opened lazily, on the first address
  // that falls in the module, so adding hundreds of modules that no stack touches costs nothing.
  void add_module(ModuleInfo module);
  // Removes the module whose range starts at `start` (dlclose); does nothing if there is none.
  void remove_module(uint64_t start);

  // The inline chain at `address`, innermost first: [inlined callee..., the function containing
  // the call site]. `is_return_address` looks up address - 1 (the call instruction), as needed
  // for every frame of an unwound stack but the first, which is an exact PC. Never empty: an
  // address in no module gives one frame with function "0x<hex address>" and module "".
  // The reference stays valid until the next add_module or remove_module.
  const std::vector<SymbolizedFrame>& symbolize(uint64_t address, bool is_return_address = true);

  // Why modules could not be used (file missing or unreadable, build-id mismatch: the file on
  // disk is not the one that ran), one line per module, in the order they were found.
  std::vector<std::string> warnings() const;

 private:
  struct LoadedModule {
    ModuleInfo info;
    std::shared_ptr<symbolize::ModuleDebugInfo> debug;  // opened on first use
  };

  LoadedModule* module_at(uint64_t address);
  std::shared_ptr<symbolize::ModuleDebugInfo> debug_info_for(const ModuleInfo& module);
  std::vector<SymbolizedFrame> lookup(uint64_t address, bool is_return_address);
  void forget_cached_addresses(uint64_t start, uint64_t end);

  std::map<uint64_t, LoadedModule> modules_;  // by start address; ranges never overlap
  // Files this instance used, by path and build-id (each unusable one warned of once); the
  // opened files themselves come from the process-wide cache (shared_module_debug_info).
  std::unordered_map<std::string, std::shared_ptr<symbolize::ModuleDebugInfo>> files_;
  // Results by address: [0] exact PCs, [1] return addresses. The same stacks repeat millions of
  // times, so each address is symbolized once.
  std::unordered_map<uint64_t, std::vector<SymbolizedFrame>> cache_[2];
  std::vector<std::string> warnings_;
};

}  // namespace gmt::analyzer
