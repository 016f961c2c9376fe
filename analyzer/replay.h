// Replays a trace's records in order into live allocations per device and kind. Memory grows
// with the number of live allocations and mappings, never with the number of events.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>

#include "analyzer/trace_summary.h"
#include "format/records.h"

namespace gmt::analyzer {

class Replay {
 public:
  // A second pass over the same trace can take, for each device, a snapshot of what was live at
  // the record that first reached its peak (known from the first pass): the peak sites.
  void snapshot_peaks_at(std::map<int, uint64_t> device_to_record) {
    snapshots_ = std::move(device_to_record);
  }

  void apply(const format::Record& record);
  // The summary so far; `summary.end` and friends are the reader's to fill.
  TraceSummary& summary() { return summary_; }

 private:
  // Addresses, VMM handles, array handles and reservations are separate name spaces: a handle
  // value may equal some device address, and a mapping starts where its reservation does.
  enum class Space : uint8_t { kAddress, kHandle, kArray, kReservation };
  struct Key {
    Space space;
    uint64_t value;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(k.value) ^ (static_cast<std::size_t>(k.space) << 61);
    }
  };
  struct LiveAllocation {
    int device;
    format::MemoryKind kind;
    uint64_t size;
    uint32_t context;
    uint32_t stack;
  };
  // A physical VMM allocation stays until it is released (once per reference) and unmapped.
  struct HandleState {
    uint32_t references = 1;
    uint32_t mappings = 0;
  };
  struct Mapping {
    uint64_t size;
    uint64_t handle;
    int device;
    bool counted;  // false for a mapping of host memory
  };

  void on(const format::ProcessInfoRecord& r);
  void on(const format::AllocRecord& r);
  void on(const format::FreeRecord& r);
  void on(const format::AllocFailedRecord& r);
  void on(const format::EndRecord& r);
  void on(const format::ContextRecord& r);
  void on(const format::ContextDestroyedRecord& r);
  void on(const format::MapRecord& r);
  void on(const format::UnmapRecord& r);
  void on(const format::RetainHandleRecord& r);
  void on(const format::StackRecord& r);
  void on(const format::ModuleRecord& r);
  void on(const format::PythonCodeRecord& r);
  void on(const format::ThreadRecord& r);
  void take_peak_snapshot(int device);

  static Space space_of(format::MemoryKind kind);
  static Space space_freed_by(format::Api api);
  static bool per_device(format::MemoryKind kind);

  void add_usage(int device, format::MemoryKind kind, uint64_t bytes, uint64_t time_ns);
  void remove_usage(int device, format::MemoryKind kind, uint64_t bytes);
  void end_allocation(std::unordered_map<Key, LiveAllocation, KeyHash>::iterator it,
                      bool by_teardown);
  void release_handle_if_unused(uint64_t handle);
  void saw_event(uint64_t time_ns);
  DeviceSummary& device(int ordinal);

  TraceSummary summary_;
  uint64_t now_ns_ = 0;
  uint64_t record_index_ = 0;  // of the record being applied
  std::map<int, uint64_t> snapshots_;
  std::unordered_map<Key, LiveAllocation, KeyHash> live_;
  std::unordered_map<uint64_t, HandleState> handles_;
  std::map<uint64_t, Mapping> mappings_;  // by address, for range unmaps
};

}  // namespace gmt::analyzer
