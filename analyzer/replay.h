// Replays a trace's records in order into live allocations per device and kind. Memory grows
// with the number of live allocations and mappings, never with the number of events.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "analyzer/timeline_builder.h"
#include "analyzer/trace_summary.h"
#include "analyzer/views_replay.h"
#include "format/records.h"

namespace gmt::analyzer {

// The rank a process had in its job, from the variables its launcher set ("RANK=3").
std::optional<int> rank_of(const std::vector<std::string>& env);

class Replay {
 public:
  // A second pass over the same trace can take, for each device, a snapshot of what was live at
  // the record that first reached its peak (known from the first pass): the peak sites.
  void snapshot_peaks_at(std::map<int, uint64_t> device_to_record) {
    snapshots_ = std::move(device_to_record);
  }

  // A second pass can also sample every site's live bytes after the records at the given
  // positions (ascending indices), for telling a leak that grows from memory that merely stays,
  // and build a timeline.
  void sample_sites_after(std::vector<uint64_t> record_indices) {
    sample_positions_ = std::move(record_indices);
  }
  void record_timeline(uint64_t resolution_ns) { timeline_.emplace(resolution_ns); }

  void apply(const format::Record& record);
  // After the last record: the timeline's buckets up to the end.
  void finish();
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
    uint64_t time_ns;
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
  // Views, devices, phases and notes: replay_views.cpp.
  void on(const format::DeviceRecord& r);
  void on(const format::SampleRecord& r);
  void on(const format::NameRecord& r);
  void on(const format::PhaseRecord& r);
  void on(const format::NoteRecord& r);
  void on(const format::PoolRecord& r);
  void take_peak_snapshot(int device);
  // Copies the views, devices, phases and notes into the summary (replay_views.cpp).
  void finish_views();
  void take_sample(uint64_t time_ns);
  void note_failure(const format::AllocFailedRecord& r);
  std::vector<PeakSite> sites_live_on(int device) const;
  void site_allocated(const LiveAllocation& a);
  void site_ended(const LiveAllocation& a, bool by_teardown);

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
  std::vector<uint64_t> sample_positions_;
  std::size_t samples_taken_ = 0;
  std::optional<TimelineBuilder> timeline_;
  ViewsReplay views_;
};

}  // namespace gmt::analyzer
