// SPDX-License-Identifier: Apache-2.0
// The traces `gpumemtrace top` watches, each read as its process writes it (live_trace.h): one
// LiveTrace per file, however many names reach it (a symlink in a job's directory and its
// target are one process), refreshed together.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "analyzer/model/live/live_trace.h"

namespace gmt::analyzer {

class LiveWatch {
 public:
  // Watches the file at `path` from now on, unless that file is watched already: by its device
  // and inode once it exists, by its canonical name until then.
  void add(const std::string& path);
  // Reads what every trace published since the last call.
  void refresh();

  // The traces, by the name they were first found by (canonical where it could be made).
  const std::map<std::string, std::unique_ptr<LiveTrace>>& traces() const { return traces_; }
  std::size_t size() const { return traces_.size(); }

 private:
  std::map<std::string, std::unique_ptr<LiveTrace>> traces_;
  std::set<std::pair<uint64_t, uint64_t>> identities_;  // (st_dev, st_ino) of those that exist
  std::set<std::string> unidentified_;                  // names watched before their file existed
};

}  // namespace gmt::analyzer
