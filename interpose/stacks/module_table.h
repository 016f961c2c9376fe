// SPDX-License-Identifier: Apache-2.0
// The modules (program and shared libraries) whose code appears in recorded stacks, each
// written to the trace once, so that the analyzer can symbolize offline.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "interpose/record/trace_writer.h"

namespace gmt::interpose {

class ModuleTable {
 public:
  explicit ModuleTable(TraceWriter& writer) : writer_(writer) {}

  // Makes sure every address in `frames` lies in a module already written to the trace. A miss
  // (a library loaded since the last look) rescans the loaded modules and writes the new ones.
  // Never called with a lock held: the rescan takes the loader's lock.
  void cover(const uint64_t* frames, int count);

  void before_fork() { mutex_.lock(); }
  void after_fork_in_parent() { mutex_.unlock(); }
  void after_fork_in_child();

 private:
  struct Range {
    uint64_t start;
    uint64_t end;
    uint64_t load_base;
    std::string path;
  };

  bool covered_locked(uint64_t address) const;

  TraceWriter& writer_;
  std::mutex mutex_;
  std::vector<Range> known_;  // sorted by start
};

}  // namespace gmt::interpose
