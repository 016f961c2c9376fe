// The model of one trace after replay: what every report prints, and nothing about how.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/memory_kind.h"
#include "format/records.h"

namespace gmt::analyzer {

// Bytes of one kind of memory: live now (at the end of the trace, once replayed) and the most
// that were ever live at once.
struct KindUsage {
  uint64_t live_bytes = 0;
  uint64_t peak_bytes = 0;
};

// Allocations live at a device's peak that were made at one call stack.
struct PeakSite {
  uint32_t stack = 0;  // StackRecord id; 0 for allocations recorded without a stack
  uint64_t bytes = 0;
  uint64_t count = 0;
};

// One frame of a symbolized stack.
struct SiteFrame {
  std::string function;
  std::optional<std::string> file;
  std::optional<int> line;
  std::optional<std::string> module;
  std::string kind = "native";  // "native" | "python"
};

// A peak site with its stack symbolized.
struct ResolvedSite {
  uint64_t bytes = 0;
  uint64_t count = 0;
  std::vector<SiteFrame> frames;  // leaf first; empty when the allocation had no stack
};

struct DeviceSummary {
  int device = -1;
  uint64_t peak_bytes = 0;  // high-water mark of device-resident bytes live on this device
  uint64_t peak_time_ns = 0;
  uint64_t live_bytes = 0;  // device-resident bytes live at the end of the trace
  uint64_t live_count = 0;  // allocations of any kind live at the end of the trace
  uint64_t alloc_count = 0;
  uint64_t free_count = 0;           // allocations ended by a free call
  uint64_t teardown_free_count = 0;  // allocations ended by their context's destruction
  uint64_t failed_alloc_count = 0;
  std::map<format::MemoryKind, KindUsage> by_kind;  // every kind seen on this device
  uint64_t peak_record = 0;  // index of the record that first reached the peak
  // Device-resident bytes live at the peak, by stack, largest first; the largest, symbolized.
  std::vector<PeakSite> peak_sites;
  std::vector<ResolvedSite> top_sites;
};

enum class TraceEnd {
  kExited,     // the End record was written: the process exited normally
  kCut,        // every record is complete, but the process never reached exit (killed, _exit)
  kTruncated,  // the file is cut short: the records of the chunks it cuts are left out
  kCorrupt,    // damaged chunks: their records are left out, all the others are read
};

struct TraceSummary {
  std::string path;
  uint64_t pid = 0;
  uint64_t ppid = 0;
  std::string host;
  std::vector<std::string> argv;
  uint64_t wall_start_ns = 0;
  uint64_t duration_ns = 0;      // time of the last record
  uint64_t events = 0;           // allocation, free, failed-allocation, map and unmap records
  uint64_t unmatched_frees = 0;  // frees of addresses this trace never saw allocated
  uint64_t failed_host_alloc_count = 0;
  TraceEnd end = TraceEnd::kCut;
  uint64_t end_offset = 0;  // the first place something was left out (kTruncated, kCorrupt)
  std::string end_reason;
  std::vector<std::string> problems;  // everything left out, where and why
  std::map<int, DeviceSummary> devices;
  // Memory that belongs to no device: pinned and registered host memory, address reservations.
  std::map<format::MemoryKind, KindUsage> process_kinds;
  // For symbolizing: the modules the process had loaded and the stacks it recorded.
  std::vector<format::ModuleRecord> modules;
  std::unordered_map<uint32_t, std::vector<uint64_t>> stacks;
  // How many ModuleRecords came before each StackRecord: a stack is symbolized with the modules
  // loaded when it was recorded, not with a library loaded later at the same addresses.
  std::unordered_map<uint32_t, std::size_t> stack_module_epoch;
  std::unordered_map<uint32_t, std::vector<uint64_t>> python_stacks;  // code id << 32 | line
  struct PythonCode {
    std::string name;
    std::string file;
  };
  std::unordered_map<uint32_t, PythonCode> python_code;
  std::vector<std::string> symbolization_warnings;
  std::map<uint64_t, std::string> threads;  // tid -> name, for the threads that recorded

  bool truncated() const { return end == TraceEnd::kTruncated || end == TraceEnd::kCorrupt; }
};

}  // namespace gmt::analyzer
