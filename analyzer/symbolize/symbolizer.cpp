// SPDX-License-Identifier: Apache-2.0
#include "analyzer/symbolize/symbolizer.h"

#include <cstdio>
#include <iterator>
#include <utility>

#include "analyzer/symbolize/module_debug_info.h"

namespace gmt::analyzer {
namespace {

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// "libfoo.so+0x1a2b"; "0x1a2b" for a module without a name.
std::string offset_name(const std::string& path, uint64_t offset) {
  const std::string name = path.substr(path.find_last_of('/') + 1);
  return name.empty() ? hex(offset) : name + "+" + hex(offset);
}

// The kernel's vDSO is reported by dl_iterate_phdr under a name no file has; saying so for
// every trace would only be noise.
bool is_vdso(const std::string& path) {
  return path.starts_with("linux-vdso.so") || path.starts_with("linux-gate.so");
}

}  // namespace

Symbolizer::Symbolizer() = default;
Symbolizer::~Symbolizer() = default;

void Symbolizer::add_module(ModuleInfo module) {
  // An empty or inverted range could never contain an address; keeping it would only shadow
  // the modules it appears to overlap.
  if (module.end <= module.start) return;
  // A recorder may list every module again after each dlopen: the same module again changes
  // nothing, and must not cost what was cached for it.
  if (const auto same = modules_.find(module.start); same != modules_.end()) {
    const ModuleInfo& known = same->second.info;
    if (known.end == module.end && known.load_base == module.load_base &&
        known.path == module.path && known.build_id == module.build_id) {
      return;
    }
  }
  // Later modules replace earlier ones they overlap: the earlier one was unloaded (dlclose) and
  // something else mapped there since.
  auto it = modules_.lower_bound(module.start);
  if (it != modules_.begin() && std::prev(it)->second.info.end > module.start) --it;
  while (it != modules_.end() && it->second.info.start < module.end) it = modules_.erase(it);
  forget_cached_addresses(module.start, module.end);
  const uint64_t start = module.start;
  modules_[start] = LoadedModule{std::move(module), nullptr};
}

void Symbolizer::remove_module(uint64_t start) {
  auto it = modules_.find(start);
  if (it == modules_.end()) return;
  forget_cached_addresses(it->second.info.start, it->second.info.end);
  modules_.erase(it);
}

void Symbolizer::forget_cached_addresses(uint64_t start, uint64_t end) {
  // Entries for addresses in the range were computed from another module, or from none. The
  // lookup address is address - 1 for return addresses, hence the inclusive upper bound there.
  for (int kind = 0; kind < 2; ++kind) {
    const uint64_t last = kind == 1 ? end : end - 1;
    for (auto it = cache_[kind].begin(); it != cache_[kind].end();) {
      if (it->first >= start && it->first <= last) {
        it = cache_[kind].erase(it);
      } else {
        ++it;
      }
    }
  }
}

Symbolizer::LoadedModule* Symbolizer::module_at(uint64_t address) {
  auto it = modules_.upper_bound(address);
  if (it == modules_.begin()) return nullptr;
  --it;
  return address < it->second.info.end ? &it->second : nullptr;
}

std::shared_ptr<symbolize::ModuleDebugInfo> Symbolizer::debug_info_for(const ModuleInfo& module) {
  std::string key = module.path;
  key += '\0';
  key += module.build_id;
  auto found = files_.find(key);
  if (found != files_.end()) return found->second;
  auto debug = symbolize::shared_module_debug_info(module.path, module.build_id);
  if (!debug->usable() && !is_vdso(module.path)) {
    warnings_.push_back((module.path.empty() ? std::string("(unnamed module)") : module.path) +
                        ": " + debug->problem() + "; its frames are shown as offsets");
  }
  files_.emplace(std::move(key), debug);
  return debug;
}

std::vector<SymbolizedFrame> Symbolizer::lookup(uint64_t address, bool is_return_address) {
  // A return address points after the call; the call instruction, whose line and inline chain
  // are the ones wanted, ends at least one byte before it.
  const uint64_t pc = is_return_address && address > 0 ? address - 1 : address;
  LoadedModule* loaded = module_at(pc);
  if (loaded == nullptr) {
    SymbolizedFrame frame;
    frame.function = hex(address);
    return {std::move(frame)};
  }
  LoadedModule& entry = *loaded;
  if (entry.debug == nullptr) entry.debug = debug_info_for(entry.info);

  std::vector<SymbolizedFrame> frames = entry.debug->frames_at(pc - entry.info.load_base);
  if (frames.empty()) frames.emplace_back();
  for (SymbolizedFrame& frame : frames) {
    // Unknown functions are named by the module and the offset of the address as given
    // ("libcudart.so.13+0x41b5e"), which is what `addr2line -e <module>` or `objdump -d` of the
    // module take.
    if (frame.function.empty())
      frame.function = offset_name(entry.info.path, address - entry.info.load_base);
    frame.module = entry.info.path;
  }
  return frames;
}

const std::vector<SymbolizedFrame>& Symbolizer::symbolize(uint64_t address,
                                                          bool is_return_address) {
  auto& cache = cache_[is_return_address ? 1 : 0];
  auto found = cache.find(address);
  if (found != cache.end()) return found->second;
  return cache.emplace(address, lookup(address, is_return_address)).first->second;
}

std::vector<std::string> Symbolizer::warnings() const {
  return warnings_;
}

}  // namespace gmt::analyzer
