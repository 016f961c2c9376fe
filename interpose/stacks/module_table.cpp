// SPDX-License-Identifier: Apache-2.0
#include "interpose/stacks/module_table.h"

#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

namespace gmt::interpose {
namespace {

struct LoadedModule {
  std::string path;
  uint64_t load_base = 0;
  uint64_t start = 0;
  uint64_t end = 0;
  std::string build_id;
};

std::string hex(const uint8_t* bytes, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 15];
  }
  return out;
}

// The GNU build-id note, read from the loaded image: no file access in the traced process.
std::string build_id_of(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
    const uint8_t* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const uint8_t* name = p + sizeof(ElfW(Nhdr));
      const uint8_t* desc = name + ((note->n_namesz + 3) & ~3u);
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
          std::equal(name, name + 4, "GNU")) {
        return hex(desc, note->n_descsz);
      }
      p = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
  return "";
}

std::string executable_path() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<std::size_t>(n)) : "";
}

int collect(dl_phdr_info* info, size_t, void* data) {
  LoadedModule m;
  m.path = info->dlpi_name != nullptr ? info->dlpi_name : "";
  // dlopen("./libx.so") is reported as given: relative to this process's directory, which the
  // analyzer does not share.
  if (!m.path.empty() && m.path[0] != '/' && m.path.find('/') != std::string::npos) {
    char resolved[PATH_MAX];
    if (realpath(m.path.c_str(), resolved) != nullptr) m.path = resolved;
  }
  m.load_base = info->dlpi_addr;
  m.start = UINT64_MAX;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    m.start = std::min<uint64_t>(m.start, info->dlpi_addr + ph.p_vaddr);
    m.end = std::max<uint64_t>(m.end, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  if (m.end == 0) return 0;
  m.build_id = build_id_of(info);
  static_cast<std::vector<LoadedModule>*>(data)->push_back(std::move(m));
  return 0;
}

}  // namespace

bool ModuleTable::covered_locked(uint64_t address) const {
  auto it = std::upper_bound(known_.begin(), known_.end(), address,
                             [](uint64_t a, const Range& r) { return a < r.start; });
  return it != known_.begin() && address < std::prev(it)->end;
}

void ModuleTable::cover(const uint64_t* frames, int count) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    bool all = true;
    for (int i = 0; i < count && all; ++i) all = covered_locked(frames[i]);
    if (all) return;
  }
  std::vector<LoadedModule> loaded;
  dl_iterate_phdr(collect, &loaded);  // outside our lock: it takes the loader's
  std::lock_guard<std::mutex> lock(mutex_);
  for (LoadedModule& m : loaded) {
    auto same = std::find_if(known_.begin(), known_.end(), [&](const Range& r) {
      return r.start == m.start && r.load_base == m.load_base && r.path == m.path;
    });
    if (same != known_.end()) continue;
    // A library unloaded and another loaded in its place: the new one replaces it.
    known_.erase(std::remove_if(known_.begin(), known_.end(),
                                [&](const Range& r) { return r.start < m.end && m.start < r.end; }),
                 known_.end());
    if (m.path.empty()) m.path = executable_path();
    format::ModuleRecord rec;
    rec.path = m.path;
    rec.load_base = m.load_base;
    rec.start = m.start;
    rec.end = m.end;
    rec.build_id = m.build_id;
    writer_.record(rec);
    known_.push_back({m.start, m.end, m.load_base, m.path});
  }
  std::sort(known_.begin(), known_.end(),
            [](const Range& a, const Range& b) { return a.start < b.start; });
}

void ModuleTable::after_fork_in_child() {
  known_.clear();  // the child's trace is a new file: it needs its own module records
  mutex_.unlock();
}

}  // namespace gmt::interpose
