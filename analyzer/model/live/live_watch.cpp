// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/live/live_watch.h"

#include <sys/stat.h>

#include <filesystem>
#include <system_error>

namespace gmt::analyzer {

void LiveWatch::add(const std::string& path) {
  std::error_code ec;
  const std::string canonical = std::filesystem::weakly_canonical(path, ec).string();
  const std::string& name = ec ? path : canonical;
  if (traces_.count(name)) return;
  struct stat st {};
  if (::stat(name.c_str(), &st) == 0) {
    if (!identities_.emplace(st.st_dev, st.st_ino).second) return;
  } else {
    unidentified_.insert(name);
  }
  traces_.emplace(name, std::make_unique<LiveTrace>(name));
}

void LiveWatch::refresh() {
  // A name watched before its file existed: once the file does, no other name of it is
  // watched again.
  for (auto it = unidentified_.begin(); it != unidentified_.end();) {
    struct stat st {};
    if (::stat(it->c_str(), &st) != 0) {
      ++it;
      continue;
    }
    identities_.emplace(st.st_dev, st.st_ino);
    it = unidentified_.erase(it);
  }
  for (auto& [path, trace] : traces_) trace->refresh();
}

}  // namespace gmt::analyzer
