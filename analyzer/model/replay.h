// SPDX-License-Identifier: Apache-2.0
// Replays a trace's records in order into live allocations per device and kind. Memory grows
// with the number of live allocations and mappings, never with the number of events.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyzer/model/backward_attribution.h"
#include "analyzer/model/blocks/block_replay.h"
#include "analyzer/model/containers/flat_hash_map.h"
#include "analyzer/model/roles/role_tracker.h"
#include "analyzer/model/timeline/timeline_builder.h"
#include "analyzer/model/trace_summary.h"
#include "analyzer/model/views/views_replay.h"
#include "format/memory_event.h"
#include "format/records.h"

namespace gmt::analyzer {

// The rank a process had in its job, from the variables its launcher set ("RANK=3").
std::optional<int> rank_of(const std::vector<std::string>& env);

class Replay {
 public:
  // Every site's live bytes can be sampled after the records at the given positions (ascending
  // indices), for telling a leak that grows from memory that merely stays (the positions depend
  // on the trace's length: the reader counts its records up front), and a timeline built.
  void sample_sites_after(std::vector<uint64_t> record_indices) {
    sample_positions_ = std::move(record_indices);
    next_sample_at_ = sample_positions_.empty() ? UINT64_MAX : sample_positions_.front();
  }
  void record_timeline(uint64_t resolution_ns) { timeline_.emplace(resolution_ns); }

  // The block rows and roles at each device's peak are a copy of its live blocks, taken at each
  // moment its users hold more during the peak's plateau. A program whose memory keeps growing
  // makes a new peak at every step: copies taken each time would cost the live blocks per step.
  // So copies stop once they have cost more than kSnapshotWorkPerRecord blocks per record read
  // (a trace stays linear in its length); the moments are still counted, and when a device's
  // last one was not copied, peak_pass_needed() says a second pass must take it, given the
  // plan (the moment per device) of this one. Until then that device's peak has no block rows
  // and no roles, rather than an older moment's.
  using PeakPlan = std::map<int, uint64_t>;
  bool peak_pass_needed() const;
  PeakPlan peak_snapshot_plan() const { return peak_moments_; }
  void plan_peak_snapshots(PeakPlan plan) { planned_peaks_ = std::move(plan); }
  static constexpr uint64_t kSnapshotWorkPerRecord = 8;

  // The peak of a phase (`peak --phase`): each device's peak is the most it held while a run of
  // the phase was open, over all its runs, and the peak's sites, block rows, roles and views
  // are of that moment; summary().phase_window says when the phase was seen. Set before the
  // first record, the same in both passes.
  void peaks_in_phase(std::string name) {
    peak_phase_ = std::move(name);
    peaks_counted_ = false;
  }

  void apply(const format::Record& record);
  // The same for allocations and frees in a batch (TraceReader::next_batch()): what apply()
  // would do with each as a record, in order. The live allocations they look up are asked of
  // the memory a few events ahead (with many allocations live, each lookup is a cache miss).
  void apply_events(std::span<const format::MemoryEvent* const> events);
  // After the last record: each device's peak sites, the timeline's buckets up to the end.
  void finish();
  // The summary so far; `summary.end` and friends are the reader's to fill. Its sites' figures
  // are those of the records applied until the last call of finish() (site_resident_bytes()
  // says what a site holds now).
  TraceSummary& summary() { return summary_; }
  // What the site holds now on its device, of device-resident kinds; 0 for a site not seen.
  uint64_t site_resident_bytes(uint64_t site_key) const;
  // The caching allocators' blocks and segments now, and what the framework's scopes and tags
  // have told of the blocks so far.
  const BlockReplay& blocks() const { return blocks_; }
  const RoleTracker& roles() const { return roles_; }

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
      // The map multiplies: the space only has to move the value.
      return k.value + (static_cast<uint64_t>(k.space) << 60);
    }
  };
  struct LiveAllocation {
    int device;
    format::MemoryKind kind;
    uint64_t size;
    uint32_t context;
    uint32_t site;  // index in sites_
    uint64_t time_ns;
  };
  // A live allocation as the map keeps it, in 32 bytes, so that a lookup reads one cache line
  // (the map is many times what the caches hold; a 56-byte entry straddled two lines most of the
  // time). The kind and the key's name space share a word with the time, which keeps 56 bits:
  // 2.28 years, past which a time saturates. The device is the site's. Whether a slot is taken
  // is the map's to know (its control bytes).
  // Aligned to 32 bytes so that no entry straddles two cache lines (a lookup costs one miss).
  struct alignas(32) LiveEntry {
    uint64_t address = 0;
    uint64_t size = 0;
    uint64_t time_tags = 0;  // time << 8 | kind << 3 | space << 1
    uint32_t site = 0;
    uint32_t context = 0;

    Key entry_key() const { return Key{static_cast<Space>((time_tags >> 1) & 3), address}; }
    void set(const Key& key, const LiveAllocation& a);
    void clear() { time_tags = 0; }
    format::MemoryKind kind() const {
      return static_cast<format::MemoryKind>((time_tags >> 3) & 31);
    }
    uint64_t time_ns() const { return time_tags >> 8; }
  };
  static_assert(sizeof(LiveEntry) == 32);
  using LiveMap = FlatHashMap<Key, LiveAllocation, KeyHash, LiveEntry>;
  // A site's figures that change with every event, in one cache line: the sites' SiteStats, with
  // their size histograms, are many times what the caches hold. summary_.sites gets them when
  // it is read (sync_sites()), and at the end.
  //
  // What it held when its device last reached a new peak: rather than a snapshot of every site
  // at every new peak (O(sites) per record while memory grows), the device's peak epoch counts
  // its new peaks, and a site saves its device-resident figures the first time they change in
  // an epoch: at the end, a site that saved in the last epoch held what it saved then, and any
  // other still holds what it held at the peak.
  struct alignas(64) SiteSlot {
    uint64_t live_bytes = 0;
    uint64_t live_resident_bytes = 0;
    uint64_t live_count = 0;
    uint64_t live_resident_count = 0;
    uint64_t allocations = 0;
    uint64_t temporaries = 0;
    uint64_t saved_epoch = UINT64_MAX;
    uint32_t device_index = 0;  // in peak_epochs_
    int32_t device = 0;
  };
  static_assert(sizeof(SiteSlot) == 64);
  struct SiteRest {
    SiteStats* stats;
    uint64_t resident_bytes_at_peak = 0;
    uint64_t resident_count_at_peak = 0;
  };
  // Where the device's summary and its kinds' usage are, found once: they are touched by every
  // allocation and free (std::map nodes do not move).
  struct DeviceSlot {
    DeviceSummary* summary = nullptr;
    std::array<KindUsage*, format::kMemoryKindCount> kinds{};
    // Stack ids are numbered from 1 as they are interned: the device's sites by stack id, for
    // the ids below kDirectStacks (kNoSite where not seen yet), without hashing.
    std::vector<uint32_t> sites_by_stack;
  };
  static constexpr uint32_t kDirectStacks = 1u << 18;
  static constexpr uint32_t kNoSite = UINT32_MAX;
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
  void on(const format::FreeRecord& r) { on_free(r); }
  // A free's fields, of a FreeRecord or of a MemoryEvent's record.
  template <class R>
  void on_free(const R& r);
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
  // Views, devices, phases and notes: replay_view_records.cpp.
  void on(const format::DeviceRecord& r);
  void on(const format::SampleRecord& r);
  void on(const format::NameRecord& r);
  void on(const format::PhaseRecord& r);
  void on(const format::NoteRecord& r);
  void on(const format::PoolRecord& r);
  // A caching allocator's block events: replay_block_records.cpp.
  void on(const format::BlockRecord& r);
  // A bounded trace's checkpoints: the reader gives the one it starts from as allocations.
  void on(const format::CheckpointRecord&) {}
  void on(const format::CarriedRecord&) {}
  void on(const format::CarriedBlockRecord&) {}
  void on(const format::CarriedVmmRecord&) {}
  void on(const format::CarriedPhaseRecord&) {}
  void on(const format::AllocatorSettingsRecord& r) { blocks_.on(r); }
  void on(const format::BlockFreedAtOncePlaceholder&) {}  // never read (the reader's Block)
  // The framework's scopes and tags: roles and modules (roles/role_tracker.h).
  void on(const format::ScopeRecord& r);
  void on(const format::TagRecord& r) { roles_.on(r); }
  void on(const format::SignalRecord& r);
  // The block rows at the moment (the peak's, or the end's), and the roles' snapshot beside.
  void take_block_rows(int ordinal, int role_slot);
  void take_role_snapshot(int ordinal, int role_slot, const std::vector<PeakSite>& rows);
  // RoleTracker's snapshot slots: the peak's, the end's, and one per kept failure from here.
  static constexpr int kRolesAtPeak = 0;
  static constexpr int kRolesAtExit = 1;
  static constexpr int kRolesAtFailure = 2;
  static constexpr std::size_t kFailuresWithRoles = 100;
  bool roles_at_exit_taken_ = false;  // at the program's end (ScopeKind::kProgramEnd)
  uint64_t roles_exit_time_ns_ = 0;
  // The sites whose allocations still live at the end are segments an allocator reported.
  void finish_blocks();
  // Address space reserved and never given back, by site and device (summary_.reservations).
  void finish_reservations();
  // What the device holds now with its allocators' segments replaced by their blocks and cache
  // (BlockReplay::rows_on); empty when no allocator reported blocks there.
  std::vector<PeakSite> block_rows_on(int device) const;
  // The block rows at a device's peak: the driver's figures stay the peak's from its new peak
  // to the next driver event (the plateau), while the allocator hands blocks out and takes them
  // back; the rows are taken when its users hold the most during the plateau (at each block
  // allocated past that most), or at its end when none was (finish(): the rows so far, the
  // plateau left open).
  void blocks_in_plateau(int device);
  void end_block_plateaus(bool close = true);
  // A moment the peak's rows are taken at: now, or counted for a second pass (above).
  void take_peak_rows(int device);
  // peaks_in_phase(): peaks are counted from the phase's opening to its closing.
  void follow_peak_phase(uint64_t time_ns);
  // An allocator's OOM: its figures onto the driver's failure it follows.
  void note_block_oom(const format::BlockRecord& r);
  // Asks the memory for the live allocation an allocation or a free of `address` looks up. Any
  // address will do (a wrong one costs a useless load).
  void prefetch(uint64_t address) const {
    live_.prefetch(Key{Space::kAddress, address});  // VMM handles and arrays are few
  }
  // After each record: the epochs of new peaks, the samples due (at the record's time, asked of
  // `time` only then).
  template <class Time>
  [[gnu::always_inline]] void applied(Time time) {
    if (!peaked_.empty()) [[unlikely]]
      start_peak_epochs();
    if (record_index_ == next_sample_at_) [[unlikely]]
      take_samples(time());
    ++record_index_;
  }
  void save_for_peak(uint32_t site);
  // Adds the logged sizes to their sites' histograms.
  void flush_sizes();
  // Copies the sites' figures from their slots into summary_.sites.
  void sync_sites();
  std::vector<PeakSite> sites_at_peak(int device) const;
  // Copies the views, devices, phases and notes into the summary (replay_view_records.cpp).
  void finish_views();
  void take_sample(uint64_t time_ns);
  // The samples due after the record at record_index_.
  void take_samples(uint64_t time_ns);
  void start_peak_epochs();
  // Keeps the failure; false when it was a retry of the open one, folded into it.
  bool note_failure(const format::AllocFailedRecord& r);
  bool retry_of_open_failure(const format::AllocFailedRecord& r) const;
  // An allocation on the open failure's thread or device: its request is over.
  void end_open_failure(const format::AllocRecord& r);
  // The `most` sites holding the most device-resident bytes on the device now, most first.
  std::vector<PeakSite> top_sites_live_on(int device, std::size_t most) const;
  uint32_t site_index(int device, uint32_t stack) {
    if (static_cast<unsigned>(device) < kCachedDevices) {
      const std::vector<uint32_t>& sites =
          device_slots_[static_cast<std::size_t>(device)].sites_by_stack;
      if (stack < sites.size() && sites[stack] != kNoSite) [[likely]]
        return sites[stack];
    }
    return site_index_slowly(device, stack);
  }
  uint32_t site_index_slowly(int device, uint32_t stack);
  uint32_t new_site(uint64_t key, int device, uint32_t stack);
  uint32_t device_index(int device);
  void site_allocated(const LiveAllocation& a);
  void site_ended(const LiveAllocation& a, bool by_teardown);

  static Space space_of(format::MemoryKind kind);
  static Space space_freed_by(format::Api api);
  static bool per_device(format::MemoryKind kind);

  // Every allocation and free asks for its device's figures, several times: the first 64
  // ordinals (a process sees a few GPUs) are answered from slots, inline.
  static constexpr int kCachedDevices = 64;
  KindUsage& usage(int device, format::MemoryKind kind) {
    const auto k = static_cast<std::size_t>(kind);
    if (static_cast<unsigned>(device) < kCachedDevices && k < format::kMemoryKindCount) {
      if (KindUsage* u = device_slots_[static_cast<std::size_t>(device)].kinds[k]) [[likely]]
        return *u;
    }
    return usage_slowly(device, kind);
  }
  KindUsage& usage_slowly(int device, format::MemoryKind kind);
  void add_usage(int device, format::MemoryKind kind, uint64_t bytes, uint64_t time_ns);
  void remove_usage(int device, format::MemoryKind kind, uint64_t bytes);
  void end_allocation(LiveMap::Entry* entry, bool by_teardown);
  void account_end(const LiveEntry& entry, bool by_teardown);
  LiveAllocation unpack(const LiveEntry& e) const;
  void release_handle_if_unused(uint64_t handle);
  void saw_event(uint64_t time_ns);
  DeviceSummary& device(int ordinal) {
    if (static_cast<unsigned>(ordinal) < kCachedDevices) {
      if (DeviceSummary* d = device_slots_[static_cast<std::size_t>(ordinal)].summary) [[likely]]
        return *d;
    }
    return device_slowly(ordinal);
  }
  DeviceSummary& device_slowly(int ordinal);

  TraceSummary summary_;
  uint64_t now_ns_ = 0;
  uint64_t record_index_ = 0;  // of the record being applied
  LiveMap live_;
  // Every site, by index, and the index of each site_key.
  std::vector<SiteSlot> sites_;
  std::vector<SiteRest> site_rest_;  // by the same index
  // The (site, bucket) of the allocations not counted in their sites' size histograms yet. An
  // allocation's bucket is a random line of a large array: counted in a batch, in a loop of
  // independent increments, the processor overlaps those misses, where in the replay each
  // would stall it.
  std::vector<uint64_t> size_log_;  // site << 8 | bucket
  static constexpr std::size_t kSizeLogEntries = 4096;
  FlatHashMap<uint64_t, uint32_t, MixedHash> site_indices_;
  // By ordinal, for the ordinals 0 to kCachedDevices - 1.
  std::vector<DeviceSlot> device_slots_ = std::vector<DeviceSlot>(kCachedDevices);
  std::array<KindUsage*, format::kMemoryKindCount> process_kinds_{};
  // By device index: how many records took the device to a new peak.
  std::vector<uint64_t> peak_epochs_;
  std::map<int, uint32_t> device_indices_;  // by ordinal
  std::vector<int> peaked_;                 // devices the record being applied took to a new peak
  std::string peak_phase_;                  // peaks_in_phase()'s, "" for the whole trace
  bool peaks_counted_ = true;               // false outside that phase
  std::unordered_map<uint64_t, HandleState> handles_;
  std::map<uint64_t, Mapping> mappings_;  // by address, for range unmaps
  // Address reservations by address: their size and the device of the memory mapped into them
  // (a reservation names none; -1 until a mapping does).
  struct Reservation {
    uint64_t size;
    int device;
  };
  std::map<uint64_t, Reservation> reservations_;
  std::vector<uint64_t> sample_positions_;
  std::size_t samples_taken_ = 0;
  uint64_t next_sample_at_ = UINT64_MAX;  // sample_positions_[samples_taken_], or none
  std::optional<TimelineBuilder> timeline_;
  ViewsReplay views_;
  BlockReplay blocks_;
  BackwardAttribution backward_;  // the stacks of blocks of autograd threads
  RoleTracker roles_;
  // By ordinal, the devices in their peak's plateau: the allocated bytes their rows were taken
  // at, none yet.
  std::map<int, std::optional<uint64_t>> block_plateaus_;
  std::map<int, std::vector<PeakSite>> block_peaks_;  // by ordinal: block_rows_on() at the peak
  // The peak's moments (take_peak_rows() calls, numbered in order), the latest per device, and
  // those taken; the blocks copied so far, for the copies' budget (against record_index_); in a
  // second pass, the moments to take.
  uint64_t peak_moment_count_ = 0;
  PeakPlan peak_moments_;
  PeakPlan peaks_taken_;
  uint64_t snapshot_work_ = 0;
  std::optional<PeakPlan> planned_peaks_;
  // The last failure kept, until an allocation on its thread or device succeeds: an allocator's
  // OOM event names it, and a retry of the same request is folded into it.
  std::optional<std::size_t> open_failure_;
  uint64_t open_failure_thread_ = 0;
  uint32_t open_failure_api_ = 0;  // the driver's (format::Api)
};

}  // namespace gmt::analyzer
