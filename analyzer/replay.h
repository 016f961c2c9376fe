// Replays a trace's records in order into live allocations per device. Memory grows with the
// number of live allocations, never with the number of events.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "analyzer/trace_summary.h"
#include "format/records.h"

namespace gmt::analyzer {

class Replay {
 public:
  void apply(const format::Record& record);
  // The summary so far; `summary.end` and friends are the reader's to fill.
  TraceSummary& summary() { return summary_; }

 private:
  struct LiveAllocation {
    int device;
    format::MemoryKind kind;
    uint64_t size;
  };

  void on(const format::ProcessInfoRecord& r);
  void on(const format::AllocRecord& r);
  void on(const format::FreeRecord& r);
  void on(const format::AllocFailedRecord& r);
  void on(const format::EndRecord& r);
  void release(const LiveAllocation& allocation);
  DeviceSummary& device(int ordinal);

  TraceSummary summary_;
  std::unordered_map<uint64_t, LiveAllocation> live_;
};

}  // namespace gmt::analyzer
