// SPDX-License-Identifier: Apache-2.0
// A trace's PyTorch block events (format's BlockRecord, allocator kPytorch) replayed through the
// caching allocator model, one model per device, in trace order, as they stream by: memory grows
// with the live blocks and segments, not with the events.
//
// What the trace gives and how it feeds the model (PyTorch's c10/cuda/CUDACachingAllocator.cpp,
// DeviceCachingAllocator):
//   - kAlloc is malloc's ALLOC trace entry, recorded with `orig_size`: the size the caller asked
//     for, not the block's (the block is that rounded, or the whole free block it came from;
//     blocks/block_extents.h rebuilds it). So it is fed as malloc(size, stream) as it stands, the
//     block's address standing for the request's id.
//   - kFreeRequested is free()'s FREE_REQUESTED: the allocated bytes drop then; kFreeCompleted is
//     free_block()'s FREE_COMPLETED: only then is the block back in the cache and reusable (a
//     block used on other streams completes later, when their events do). The model is given
//     both (free_requested(), free()), so a deferred free is replayed where it completed.
//   - The settings are AllocatorSettingsRecord's (max_split_size, roundup_power2_divisions).
//     Expandable segments are not in that record: a device's first kSegmentMap shows them on,
//     and the model follows from then (a mapping precedes the request that needed it).
//   - Segment frees and unmaps the trace shows come from three places in PyTorch: the
//     program's torch.cuda.empty_cache(); the allocator's own release when cudaMalloc failed
//     (release_available_cached_blocks, release_cached_blocks, then a retry or the OOM); and
//     garbage collection (its threshold is not recorded). A run of them is decided at the next
//     block event of its device: when a cudaMalloc failed on the device since the last request
//     (the trace's AllocFailed record) or the next event is the OOM, they are the allocator's
//     own release; otherwise they are the program's empty_cache(), and the model's empty_cache()
//     mirrors them, in every replay. The allocator's own release is the model's to make: in the
//     unchanged replay the model is given, for that one request, the capacity the recording
//     shows (what it held less what it released, plus what it then took, or one byte short of
//     the request at an OOM), so that it fails, releases and retries by its own rules; a what-if
//     replay runs with a fixed capacity and does what the model does.
//   - The unchanged replay hands the model the recorded segments' addresses while the two
//     agree (PyTorch orders equal-size free blocks by address), later ones above every
//     recorded address; a what-if replay makes up its own.
// A CUDA graph capture's private pool is not followed (its requests go to the default pools).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "analyzer/model/allocator/allocator_settings.h"
#include "analyzer/model/allocator/block_roles.h"
#include "analyzer/model/allocator/caching_allocator_model.h"
#include "analyzer/model/allocator/model_gaps.h"
#include "analyzer/model/allocator/segment_match.h"
#include "format/records.h"
#include "format/trace_reader.h"

namespace gmt::analyzer::allocator {

// A what-if's torch.cuda.empty_cache() where the program did not call it: at the end of each
// phase of a name (an NVTX range or a gpumemtrace phase), of each optimizer step, or of each
// backward.
struct EmptyCacheAt {
  enum class Kind : uint8_t { kPhase, kStep, kBackward };
  Kind kind = Kind::kStep;
  std::string phase;  // kPhase: the phase's name
};
// "step", "backward", else a phase's name; empty text is an error (std::invalid_argument).
EmptyCacheAt parse_empty_cache_at(const std::string& text);

struct ReplayOptions {
  // Unset: the unchanged replay, the recorded settings and the recorded run's failures, checked
  // against the recording (fidelity). Set: a what-if, these settings as PyTorch reads
  // PYTORCH_CUDA_ALLOC_CONF (parse_alloc_conf over the recorded ones, which it must parse).
  std::optional<std::string> alloc_conf;
  // A what-if's bytes the allocator may hold per device (cudaMalloc fails past them); a device
  // not named: no limit. The unchanged replay ignores it.
  std::map<int, uint64_t> capacity;
  // A what-if with the recorded settings: the same as the unchanged replay's but its capacity.
  bool what_if = false;
  // Each request's role (read_block_roles over the same trace): the figures at the peak by role
  // and the scales below. None: every request's role is unknown.
  const BlockRoles* roles = nullptr;
  // A what-if: each request of a role asks for its size times the role's scale (rounded to the
  // byte, at least one; the model then rounds it as PyTorch does). 1: unchanged.
  std::array<double, kRoleCount> scale = unit_scale();
  // A what-if with the batch fitted from a second run (batch_fit.h), by request ordinal: a
  // request with a slope asks for its size plus the slope times (batch_scale - 1), times its
  // role's scale without the batch's part (dtype, shard); one without, as `scale` has it.
  const std::vector<float>* batch_slopes = nullptr;
  double batch_scale = 1.0;
  // A what-if: the allocator's cache released there too (each device's).
  std::optional<EmptyCacheAt> empty_cache_at;
  // A what-if that only asks whether the run fits: the replay stops at the first request the
  // model fails (the figures are then those up to it).
  bool stop_at_failure = false;

  static std::array<double, kRoleCount> unit_scale() {
    std::array<double, kRoleCount> s{};
    s.fill(1.0);
    return s;
  }
};

// The device's memory neither free nor the allocator's (`reserved` then) at a sample of the
// driver (cuMemGetInfo's): the CUDA context, libraries, other processes. None where the sample
// has no driver figures.
std::optional<uint64_t> held_outside(const format::SampleRecord& s, uint64_t reserved);

// The size a request of `size` asks under `scale` (ReplayOptions::scale's rule).
uint64_t scaled_request(uint64_t size, double scale);

// One device's replay.
struct DeviceReplayResult {
  int device = -1;
  uint64_t total_bytes = 0;  // the device's memory as the trace recorded it; 0: not known

  // The recording, from its block events: the highest reserved (segments and mapped pages) and
  // allocated (the blocks as PyTorch counts them, rebuilt by BlockExtents; the unchanged replay
  // only: a what-if leaves it 0).
  uint64_t recorded_max_allocated = 0;
  uint64_t recorded_max_reserved = 0;
  uint64_t recorded_ooms = 0;
  // The most the allocator could hold as the recording shows it: one byte short of what it held
  // plus a cudaMalloc that failed (the lowest such); UINT64_MAX when none failed.
  uint64_t recorded_capacity_bound = UINT64_MAX;
  // The device's memory held outside the allocator as the driver's samples show it (cuMemGetInfo:
  // used less the allocator's reserved, the median over samples): the context, libraries, other
  // processes. 0 without samples.
  uint64_t sampled_outside_bytes = 0;

  // The model's.
  ModelStats stats;
  uint64_t requests = 0;
  uint64_t failed_requests = 0;                  // OOMs: the model could not serve them
  std::optional<uint64_t> first_failed_size;     // the first one's size
  std::optional<uint64_t> first_failed_request;  // and how many requests came before it
  // A what-if: requests the recording failed that the model served (then freed at once).
  uint64_t recorded_failures_served = 0;
  // Requests after the first of those made outside any forward, backward and optimizer step
  // (no role, or an input): the program caught its failure and went on, and what it asked for
  // then answered the failure (a loop that fills the device until a request fails asks for more
  // where more fits), so the replay past the failure is not a prediction. Inside one, a
  // library may have caught it (cuDNN's benchmark tries another algorithm): not counted.
  uint64_t requests_after_served_failure = 0;
  std::optional<uint64_t> first_served_failure_request;  // how many requests came before it
  uint64_t first_served_failure_size = 0;
  // Whether the verdict rests on those requests: the program went on after a failure the replay
  // served, and no request failed in the replay before it.
  bool verdict_past_caught_failure() const {
    return requests_after_served_failure > 0 && first_served_failure_request &&
           (!first_failed_request || *first_failed_request > *first_served_failure_request);
  }

  // How the recording was followed.
  uint64_t empty_cache_mirrored = 0;  // runs of segment frees taken as empty_cache()
  uint64_t empty_cache_added = 0;     // a what-if's own (ReplayOptions::empty_cache_at)
  uint64_t allocator_releases = 0;    // failed cudaMallocs the allocator released cache after
  uint64_t deferred_frees = 0;        // frees completed later than requested (record_stream)
  bool expandable_inferred = false;   // kSegmentMap seen: expandable segments on
  uint64_t synthetic_addresses = 0;   // segments the model placed itself

  // The unchanged replay against the recording: segments in order, and where they first
  // differed, if they did.
  uint64_t recorded_segments = 0;
  uint64_t modelled_segments = 0;
  uint64_t matched_segments = 0;
  std::optional<Divergence> divergence;

  // A bounded trace: the run's start is not in it, so neither is the state the replay needs.
  bool history_dropped = false;

  // The allocated bytes by role at the highest allocated, the reserved bytes not handed out
  // then as kAllocatorCache (they add up to the reserved bytes of that moment): the recording's
  // (the unchanged replay only) and the model's.
  std::array<uint64_t, kRoleCount> recorded_roles_at_peak{};
  std::array<uint64_t, kRoleCount> roles_at_peak{};

  // What the model does not reproduce: met (counted) or always there.
  std::vector<std::pair<Gap, uint64_t>> gaps;

  // The unchanged replay reproduced the recording: every segment, the highest reserved and
  // allocated, nothing it could not replay.
  bool exact() const;
};

struct TraceReplayResult {
  std::vector<DeviceReplayResult> devices;  // by device
  uint64_t block_events = 0;                // PyTorch's
  uint64_t cuda_graph_captures = 0;         // captures seen (their private pools not followed)
  // Optimizer steps a what-if replay did not run again: each repeated the one before it from
  // the same state (ReplayEvents::replay).
  uint64_t steps_skipped = 0;
  bool history_dropped = false;       // a bounded trace: the run's start is not in it
  std::vector<std::string> problems;  // what the reader left out
};

class TraceReplay {
 public:
  explicit TraceReplay(ReplayOptions options = {});
  TraceReplay(const TraceReplay&) = delete;
  TraceReplay& operator=(const TraceReplay&) = delete;
  ~TraceReplay();

  void apply(const format::Record& record);
  // The next request's ordinal (BlockRoles'), where the records are not the trace's own (a
  // what-if that adds requests: checkpointing's recomputation asks again for what a module made).
  void set_next_request(uint64_t ordinal) { request_ordinal_ = ordinal; }
  // A device's model as the records so far left it; none before its first PyTorch block event.
  const CachingAllocatorModel* model(int device) const;
  // Whether the model has failed a request the recording served (a what-if's OOM).
  bool failed() const { return failed_; }
  // The requests the model failed so far, every device's.
  uint64_t failed_requests() const;
  // After the last record: segment frees left pending are the program's, the last segments
  // compared.
  TraceReplayResult finish();

  // A what-if replay's state (CachingAllocatorModel::append_state): every device's model, and
  // what the replay carries from one event to the next, without counters or highest figures.
  // Where it is the same before two runs of the same events, the second run repeats the first:
  // the same figures, no new highest, its counters grown by as much (ReplayEvents::replay skips
  // such runs). std::logic_error for the unchanged replay, whose recording's state is not in it.
  void append_state(std::vector<uint64_t>& out) const;
  // A few words of the state, at once (CachingAllocatorModel::append_summary): states alike
  // have the same summary.
  void append_summary(std::vector<uint64_t>& out) const;
  // Each count that only grows, every device's, in a fixed order.
  void visit_counters(const std::function<void(uint64_t&)>& visit);

 private:
  struct Device;

  Device& device(int ordinal);
  AllocatorSettings effective_settings() const;
  void settings_changed();
  void on(const format::BlockRecord& r);
  void on_settings(const format::AllocatorSettingsRecord& r);
  void on_alloc_failed(const format::AllocFailedRecord& r);
  // ReplayOptions::empty_cache_at: the phases, steps and backwards that end.
  void on_name(const format::NameRecord& r);
  void on_phase(const format::PhaseRecord& r);
  void on_scope(const format::ScopeRecord& r);
  void sampled_outside(const format::SampleRecord& s);
  void empty_cache_added();
  void request(Device& d, const format::BlockRecord& r, bool failed_in_recording, Role role);
  // What request `ordinal` (of `size`, `role`) asks for under the scales and batch slopes.
  uint64_t requested_size(uint64_t size, Role role, uint64_t ordinal) const;
  void free_requested(Device& d, const format::BlockRecord& r);
  void model_allocated(Device& d, uint64_t id, uint64_t bytes, std::size_t role);
  void model_freed(Device& d, uint64_t id);
  void free_completed(Device& d, const format::BlockRecord& r);
  // Decides on the segment frees pending before an event that is not the request they belong
  // to: the program's empty_cache().
  void settle(Device& d, bool next_is_request, bool next_is_oom);
  // The model's segment events since the last call: its new segments to the match, the bytes
  // it gave back returned.
  uint64_t drain(Device& d);
  uint64_t needed_bytes(const Device& d, uint64_t size) const;

  ReplayOptions options_;
  bool unchanged_ = true;
  AllocatorSettings recorded_settings_;
  bool expandable_seen_ = false;
  std::map<int, uint64_t> totals_;  // by device: DeviceRecord's, else a sample's
  std::map<int, std::unique_ptr<Device>> devices_;
  Device* last_ = nullptr;
  uint64_t block_events_ = 0;
  uint64_t cuda_graph_captures_ = 0;
  uint64_t request_ordinal_ = 0;  // PyTorch's requests so far, every device (BlockRoles')
  bool failed_ = false;
  // ReplayOptions::empty_cache_at's phase: the name ids that read it, each thread's open
  // pushed ranges (whether each is the phase) and the started ranges that are.
  std::unordered_set<uint32_t> phase_names_;
  std::map<uint64_t, std::vector<bool>> pushed_;
  std::unordered_set<uint64_t> started_;
};

// Reads a whole trace (`bytes`, its file's contents; `name` in errors) through a TraceReplay.
// Throws TraceError when it is not a readable trace at all. `also`, where given, is handed
// every record read, in order, before the replay applies it, and the number the reader expects
// before the first (ReplayEventsCollector: the events a search replays, gathered in the same
// pass).
using RecordTap = std::function<void(const format::Record&)>;
TraceReplayResult replay_trace(std::span<const uint8_t> bytes, const std::string& name,
                               const ReplayOptions& options = {}, format::PageAccess pages = {},
                               const std::function<RecordTap(uint64_t)>& also = {});
TraceReplayResult replay_trace_file(const std::string& path, const ReplayOptions& options = {});

}  // namespace gmt::analyzer::allocator
