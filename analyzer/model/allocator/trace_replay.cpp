// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/allocator/trace_replay.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_set>
#include <variant>

#include "analyzer/model/blocks/block_extents.h"
#include "analyzer/model/containers/flat_hash_map.h"
#include "analyzer/model/input/mapped_file.h"
#include "analyzer/model/input/trace_error.h"
#include "format/file_header.h"

namespace gmt::analyzer::allocator {
namespace {

using format::BlockAction;
using gmt::analyzer::BlockExtents;

// Where the segments the model places itself start, each below the one before: above any address
// CUDA gives a process, and in the order the driver gave large segments in the H100 runs
// recorded (each lower than the one before, bar small ones placed in gaps). PyTorch orders
// equal-size free blocks by address, so which one best fit takes follows it: with segments
// placed upwards, the Transformer at batch x5 (tests/data) fitted after releasing three wholly
// free 960 MiB segments, where the run, its blocks in the newest segments, had one to release
// and ran out; placed downwards, the model's cache was the run's, block for block.
constexpr uint64_t kFirstSyntheticAddress = 1ull << 62;
constexpr uint64_t kSyntheticAlignment = 2ull << 20;
// A recorded block whose free was requested and has not completed.
constexpr uint64_t kFreeRequestedBit = 1ull << 63;
// A recorded block's value: its size, its role above it.
constexpr int kRoleShift = 56;
constexpr uint64_t kSizeMask = (1ull << kRoleShift) - 1;
std::size_t role_in(uint64_t value) {
  return static_cast<std::size_t>(value >> kRoleShift & 0x7F);
}
// The id of a request the recording failed (it has no block, hence no address).
constexpr uint64_t kFailedRequestId = UINT64_MAX;

bool is_pytorch(uint32_t allocator) {
  return allocator == static_cast<uint32_t>(format::BlockAllocator::kPytorch);
}

BlockExtents::Settings extents_settings(const AllocatorSettings& s) {
  BlockExtents::Settings e;
  e.max_split_size = s.max_split_size;
  std::copy_n(s.roundup_divisions.begin(), std::min(e.divisions.size(), s.roundup_divisions.size()),
              e.divisions.begin());
  return e;
}

}  // namespace

struct TraceReplay::Device {
  explicit Device(ModelOptions options) : model(std::move(options)) {}

  int ordinal = -1;
  CachingAllocatorModel model;
  SegmentMatch match;
  // The recording's figures.
  BlockExtents extents;
  FlatHashMap<uint64_t, uint64_t, MixedHash> blocks;  // address: size | kFreeRequestedBit
  uint64_t allocated = 0;
  uint64_t max_allocated = 0;
  uint64_t reserved = 0;
  uint64_t max_reserved = 0;
  uint64_t ooms = 0;
  uint64_t capacity_bound = UINT64_MAX;
  // Segment frees not yet decided on (TraceReplay::settle); the segments taken since the last
  // request.
  uint64_t pending_released = 0;
  uint64_t pending_count = 0;
  uint64_t taken_since_request = 0;
  bool failure_pending = false;  // a cudaMalloc failed since the last request
  // The last block whose free was requested, while nothing else happened on the device.
  std::optional<uint64_t> last_free_requested;
  // Requests the model failed: their frees are not the model's.
  std::unordered_set<uint64_t> failed;
  uint64_t next_synthetic = kFirstSyntheticAddress;
  // The allocated bytes by role: the recording's (the unchanged replay) and the model's, whose
  // live blocks are kept by request id as block size | role << kRoleShift.
  std::array<uint64_t, kRoleCount> recorded_roles{};
  std::array<uint64_t, kRoleCount> model_roles{};
  FlatHashMap<uint64_t, uint64_t, MixedHash> model_blocks;
  uint64_t model_peak = 0;

  // sampled_outside()'s, one a sample.
  std::vector<uint64_t> outside_samples;

  DeviceReplayResult result;
};

uint64_t scaled_request(uint64_t size, double scale) {
  if (scale == 1.0) return size;
  return std::max<uint64_t>(1,
                            static_cast<uint64_t>(std::llround(static_cast<double>(size) * scale)));
}

bool DeviceReplayResult::exact() const {
  if (divergence.has_value() || history_dropped) return false;
  if (recorded_max_reserved != stats.max_reserved_bytes) return false;
  if (recorded_max_allocated != stats.max_allocated_bytes) return false;
  for (const auto& [gap, count] : gaps) {
    if (gap == Gap::kUnknownFree && count > 0) return false;
  }
  return true;
}

TraceReplay::TraceReplay(ReplayOptions options)
    : options_(std::move(options)),
      unchanged_(!options_.alloc_conf.has_value() && !options_.what_if) {}

TraceReplay::~TraceReplay() = default;

AllocatorSettings TraceReplay::effective_settings() const {
  AllocatorSettings recorded = recorded_settings_;
  if (expandable_seen_) recorded.expandable_segments = true;
  if (!options_.alloc_conf) return recorded;
  return parse_alloc_conf(*options_.alloc_conf, recorded).settings;
}

void TraceReplay::settings_changed() {
  const AllocatorSettings s = effective_settings();
  for (auto& [ordinal, d] : devices_) {
    d->model.set_settings(s);
    d->extents.set(extents_settings(recorded_settings_));
  }
}

TraceReplay::Device& TraceReplay::device(int ordinal) {
  if (last_ != nullptr && last_->ordinal == ordinal) return *last_;
  auto it = devices_.find(ordinal);
  if (it == devices_.end()) {
    ModelOptions mo;
    mo.settings = effective_settings();
    if (const auto t = totals_.find(ordinal); t != totals_.end()) mo.device_total = t->second;
    if (!unchanged_) {
      if (const auto c = options_.capacity.find(ordinal); c != options_.capacity.end())
        mo.capacity = c->second;
    }
    auto d = std::make_unique<Device>(ModelOptions{});
    Device* raw = d.get();
    const bool unchanged = unchanged_;
    mo.segment_address = [raw, unchanged](uint64_t size, bool expandable) {
      if (unchanged) {
        if (const auto a = raw->match.claim_address(expandable, size)) return *a;
      }
      ++raw->result.synthetic_addresses;
      raw->next_synthetic -=
          (size + kSyntheticAlignment - 1) / kSyntheticAlignment * kSyntheticAlignment;
      return raw->next_synthetic;
    };
    raw->model = CachingAllocatorModel(std::move(mo));
    raw->ordinal = ordinal;
    raw->extents.set(extents_settings(recorded_settings_));
    raw->result.device = ordinal;
    it = devices_.emplace(ordinal, std::move(d)).first;
  }
  last_ = it->second.get();
  return *last_;
}

const CachingAllocatorModel* TraceReplay::model(int device) const {
  const auto it = devices_.find(device);
  return it != devices_.end() ? &it->second->model : nullptr;
}

void TraceReplay::apply(const format::Record& record) {
  if (const auto* b = std::get_if<format::BlockRecord>(&record)) {
    if (is_pytorch(b->allocator)) on(*b);
  } else if (const auto* s = std::get_if<format::AllocatorSettingsRecord>(&record)) {
    if (is_pytorch(s->allocator)) on_settings(*s);
  } else if (const auto* f = std::get_if<format::AllocFailedRecord>(&record)) {
    on_alloc_failed(*f);
  } else if (const auto* dr = std::get_if<format::DeviceRecord>(&record)) {
    if (dr->total_bytes != 0) totals_[dr->device] = dr->total_bytes;
  } else if (const auto* sr = std::get_if<format::SampleRecord>(&record)) {
    sampled_outside(*sr);
    if (!totals_.contains(sr->device)) {
      if ((sr->present & format::SampleField::kDriverTotal) != 0 && sr->driver_total != 0) {
        totals_[sr->device] = sr->driver_total;
      } else if ((sr->present & format::SampleField::kNvmlDeviceTotal) != 0 &&
                 sr->nvml_device_total != 0) {
        totals_[sr->device] = sr->nvml_device_total;
      }
    }
  } else if (const auto* sc = std::get_if<format::ScopeRecord>(&record)) {
    if (sc->kind == static_cast<uint32_t>(format::ScopeKind::kCudaGraph) &&
        sc->action == static_cast<uint32_t>(format::ScopeAction::kEnter))
      ++cuda_graph_captures_;
    if (options_.empty_cache_at) on_scope(*sc);
  } else if (!options_.empty_cache_at) {
    return;
  } else if (const auto* n = std::get_if<format::NameRecord>(&record)) {
    on_name(*n);
  } else if (const auto* p = std::get_if<format::PhaseRecord>(&record)) {
    on_phase(*p);
  }
}

// The device's memory neither free nor the allocator's at a sample (cuMemGetInfo's): the CUDA
// context, libraries' own allocations, other processes. Only while the allocator holds some (a
// sample before its first segment sees a context still growing).
std::optional<uint64_t> held_outside(const format::SampleRecord& s, uint64_t reserved) {
  constexpr uint32_t kDriver = format::SampleField::kDriverFree | format::SampleField::kDriverTotal;
  if ((s.present & kDriver) != kDriver || s.driver_total == 0) return std::nullopt;
  const uint64_t held = s.driver_total - std::min(s.driver_total, s.driver_free);
  return held - std::min(held, reserved);
}

void TraceReplay::sampled_outside(const format::SampleRecord& s) {
  const auto it = devices_.find(s.device);
  if (it == devices_.end() || it->second->reserved == 0) return;
  if (const auto outside = held_outside(s, it->second->reserved))
    it->second->outside_samples.push_back(*outside);
}

EmptyCacheAt parse_empty_cache_at(const std::string& text) {
  if (text.empty()) throw std::invalid_argument("expected step, backward or a phase's name");
  EmptyCacheAt at;
  if (text == "step") {
    at.kind = EmptyCacheAt::Kind::kStep;
  } else if (text == "backward") {
    at.kind = EmptyCacheAt::Kind::kBackward;
  } else {
    at.kind = EmptyCacheAt::Kind::kPhase;
    at.phase = text;
  }
  return at;
}

void TraceReplay::empty_cache_added() {
  for (auto& [ordinal, d] : devices_) {
    ++d->result.empty_cache_added;
    d->model.empty_cache();
    drain(*d);
  }
}

void TraceReplay::on_name(const format::NameRecord& r) {
  if (options_.empty_cache_at->kind == EmptyCacheAt::Kind::kPhase &&
      r.text == options_.empty_cache_at->phase)
    phase_names_.insert(r.id);
}

// Ranges nest per thread (push, pop) or are named by their id (start, end): the end of one
// named as the phase is where the cache goes.
void TraceReplay::on_phase(const format::PhaseRecord& r) {
  switch (static_cast<format::PhaseAction>(r.action)) {
    case format::PhaseAction::kPush:
      pushed_[r.tid].push_back(phase_names_.contains(r.name));
      return;
    case format::PhaseAction::kPop: {
      auto it = pushed_.find(r.tid);
      if (it == pushed_.end() || it->second.empty()) return;
      const bool phase = it->second.back();
      it->second.pop_back();
      if (phase) empty_cache_added();
      return;
    }
    case format::PhaseAction::kStart:
      if (phase_names_.contains(r.name)) started_.insert(r.range);
      return;
    case format::PhaseAction::kEnd:
      if (started_.erase(r.range) > 0) empty_cache_added();
      return;
    case format::PhaseAction::kMark:
      return;
  }
}

void TraceReplay::on_scope(const format::ScopeRecord& r) {
  if (r.action != static_cast<uint32_t>(format::ScopeAction::kExit)) return;
  const EmptyCacheAt::Kind kind = options_.empty_cache_at->kind;
  if ((kind == EmptyCacheAt::Kind::kStep &&
       r.kind == static_cast<uint32_t>(format::ScopeKind::kOptimizer)) ||
      (kind == EmptyCacheAt::Kind::kBackward &&
       r.kind == static_cast<uint32_t>(format::ScopeKind::kBackward)))
    empty_cache_added();
}

void TraceReplay::on_settings(const format::AllocatorSettingsRecord& r) {
  recorded_settings_ = AllocatorSettings::of(r);
  settings_changed();
}

// A cudaMalloc that failed: the allocator could not hold what it held and that much more.
void TraceReplay::on_alloc_failed(const format::AllocFailedRecord& r) {
  if (r.kind != format::MemoryKind::kDevice) return;
  const auto it = devices_.find(r.device);
  if (it == devices_.end()) return;  // no PyTorch segment yet
  Device& d = *it->second;
  d.failure_pending = true;
  if (r.size > 0) d.capacity_bound = std::min(d.capacity_bound, d.reserved + r.size - 1);
}

namespace {

// A request made outside any forward, backward and optimizer step (BlockRoles: no role, or an
// input): a failure there was the program's own to catch. Inside one, a library may catch it
// and try another way (cuDNN's benchmark tries another algorithm when a workspace fails).
bool outside_model_code(Role role) {
  return role == Role::kUnknown || role == Role::kInput;
}

}  // namespace

void TraceReplay::on(const format::BlockRecord& r) {
  ++block_events_;
  Device& d = device(r.device);
  const auto action = static_cast<BlockAction>(r.action);
  if (action != BlockAction::kFreeCompleted) d.last_free_requested.reset();
  switch (action) {
    case BlockAction::kAlloc:
    case BlockAction::kOom: {
      const Role role =
          options_.roles != nullptr ? options_.roles->of(request_ordinal_) : Role::kUnknown;
      ++request_ordinal_;
      if (action == BlockAction::kOom) ++d.ooms;
      return request(d, r, action == BlockAction::kOom, role);
    }
    case BlockAction::kFreeRequested:
      return free_requested(d, r);
    case BlockAction::kFreeCompleted:
      return free_completed(d, r);
    case BlockAction::kSegmentAlloc:
    case BlockAction::kSegmentMap: {
      const bool map = action == BlockAction::kSegmentMap;
      if (map && !expandable_seen_) {
        expandable_seen_ = true;
        for (auto& [ordinal, other] : devices_) other->result.expandable_inferred = true;
        settings_changed();
      }
      if (unchanged_) d.extents.follow(r);
      d.reserved += r.size;
      d.max_reserved = std::max(d.max_reserved, d.reserved);
      d.taken_since_request += r.size;
      if (unchanged_) d.match.recorded({map, r.size, r.address});
      return;
    }
    case BlockAction::kSegmentFree:
    case BlockAction::kSegmentUnmap:
      if (unchanged_) d.extents.follow(r);
      d.reserved -= std::min(d.reserved, r.size);
      d.pending_released += r.size;
      ++d.pending_count;
      return;
  }
}

uint64_t TraceReplay::drain(Device& d) {
  uint64_t released = 0;
  for (const SegmentEvent& e : d.model.events()) {
    switch (e.action) {
      case SegmentAction::kAlloc:
      case SegmentAction::kMap:
        // The model counts a request before it takes its segment: the requests before it
        // are one fewer.
        if (unchanged_)
          d.match.modelled({e.action == SegmentAction::kMap, e.size, e.address},
                           e.request > 0 ? e.request - 1 : 0);
        break;
      case SegmentAction::kFree:
      case SegmentAction::kUnmap:
        released += e.size;
        break;
    }
  }
  d.model.clear_events();
  return released;
}

// What a cudaMalloc for the request would ask: its segment, or with expandable segments the
// pages that hold it.
uint64_t TraceReplay::needed_bytes(const Device& d, uint64_t size) const {
  const AllocatorSettings& s = d.model.settings();
  const uint64_t rounded = round_size(size, s.roundup_divisions);
  if (!s.expandable_segments) return allocation_size(rounded, s.large_segment_size);
  const uint64_t page = is_small(rounded) ? kSmallBuffer : s.large_segment_size;
  return (rounded + page - 1) / page * page;
}

void TraceReplay::settle(Device& d, bool next_is_request, bool next_is_oom) {
  if (d.pending_count == 0) return;
  // After a failed cudaMalloc the frees belong to the request still under way, whatever comes
  // between them (release_cached_blocks completes deferred frees first: FREE_COMPLETED entries
  // may sit between its segment frees and release_available_cached_blocks').
  if (d.failure_pending) return;
  if (next_is_request && next_is_oom) return;  // the OOM's own release
  // The program's torch.cuda.empty_cache().
  ++d.result.empty_cache_mirrored;
  d.model.empty_cache();
  const uint64_t released = drain(d);
  if (unchanged_ && released != d.pending_released) {
    Divergence v;
    v.kind = Divergence::Kind::kRelease;
    v.segment = d.match.matched();
    v.request = d.result.requests;
    v.recorded_bytes = d.pending_released;
    v.modelled_bytes = released;
    d.match.diverge(v);
  }
  d.pending_released = 0;
  d.pending_count = 0;
}

uint64_t TraceReplay::requested_size(uint64_t size, Role role, uint64_t ordinal) const {
  const double scale = options_.scale[static_cast<std::size_t>(role)];
  const std::vector<float>* slopes = options_.batch_slopes;
  if (slopes == nullptr || ordinal >= slopes->size() || std::isnan((*slopes)[ordinal]))
    return scaled_request(size, scale);
  const bool batch_role =
      role == Role::kActivation || role == Role::kTemporary || role == Role::kInput;
  const double fitted =
      std::max(1.0, static_cast<double>(size) + (*slopes)[ordinal] * (options_.batch_scale - 1.0));
  const double other = batch_role ? scale / options_.batch_scale : scale;
  return std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(fitted * other)));
}

void TraceReplay::request(Device& d, const format::BlockRecord& r, bool failed_in_recording,
                          Role role) {
  const std::size_t role_index = static_cast<std::size_t>(role);
  const uint64_t size = requested_size(r.size, role, request_ordinal_ - 1);
  settle(d, true, failed_in_recording);
  const bool allocator_release = d.failure_pending || failed_in_recording;
  const uint64_t id = failed_in_recording ? kFailedRequestId : r.address;
  const uint64_t requests_before = d.result.requests;
  ++d.result.requests;
  if (d.result.first_served_failure_request) ++d.result.requests_after_served_failure;
  // The recording's allocated bytes (the block as PyTorch counts it), for the fidelity.
  if (unchanged_ && !failed_in_recording) {
    const uint64_t size =
        d.extents.allocate(r.address, r.size, [&](uint64_t address, uint64_t resized) {
          if (auto* e = d.blocks.find(address);
              e != nullptr && (e->value & kFreeRequestedBit) == 0) {
            const uint64_t old = e->value & kSizeMask;
            const std::size_t old_role = role_in(e->value);
            d.allocated = d.allocated - old + resized;
            d.recorded_roles[old_role] = d.recorded_roles[old_role] - old + resized;
            e->value = resized | (e->value & ~kSizeMask);
          }
        });
    if (auto* old = d.blocks.find(r.address); old != nullptr) {  // its free was not recorded
      if ((old->value & kFreeRequestedBit) == 0) {
        d.allocated -= old->value & kSizeMask;
        d.recorded_roles[role_in(old->value)] -= old->value & kSizeMask;
      }
      d.blocks.erase(old);
    }
    d.blocks.insert(r.address, size | static_cast<uint64_t>(role_index) << kRoleShift);
    d.allocated += size;
    d.recorded_roles[role_index] += size;
    if (d.allocated > d.max_allocated) {
      d.max_allocated = d.allocated;
      d.result.recorded_roles_at_peak = d.recorded_roles;
      d.result.recorded_roles_at_peak[static_cast<std::size_t>(Role::kAllocatorCache)] =
          d.reserved - std::min(d.reserved, d.allocated);
    }
  }

  AllocOutcome out;
  if (unchanged_ && allocator_release) {
    // The capacity the recording shows for this one request (see the header).
    const uint64_t held = d.model.stats().reserved_bytes;
    const uint64_t left = held - std::min(held, d.pending_released);
    const uint64_t capacity =
        failed_in_recording ? left + needed_bytes(d, r.size) - 1 : left + d.taken_since_request;
    d.model.set_capacity(capacity);
    out = d.model.malloc(id, size, r.stream);
    d.model.set_capacity(UINT64_MAX);
    ++d.result.allocator_releases;
    const uint64_t released = drain(d);
    if (released != d.pending_released) {
      Divergence v;
      v.kind = Divergence::Kind::kRelease;
      v.segment = d.match.matched();
      v.request = requests_before;
      v.recorded_bytes = d.pending_released;
      v.modelled_bytes = released;
      d.match.diverge(v);
    }
  } else {
    out = d.model.malloc(id, size, r.stream);
    drain(d);
  }
  if (out.ok) model_allocated(d, id, out.block_size, role_index);
  d.pending_released = 0;
  d.pending_count = 0;
  d.taken_since_request = 0;
  d.failure_pending = false;

  if (!out.ok) {
    ++d.result.failed_requests;
    if (!failed_in_recording) failed_ = true;
    if (!d.result.first_failed_size) {
      d.result.first_failed_size = size;
      d.result.first_failed_request = requests_before;
    }
    if (!failed_in_recording) d.failed.insert(id);
    if (unchanged_ && !failed_in_recording) {
      Divergence v;
      v.kind = Divergence::Kind::kRequestFailed;
      v.segment = d.match.matched();
      v.request = requests_before;
      v.recorded_bytes = r.size;
      d.match.diverge(v);
    }
  } else if (failed_in_recording) {
    model_freed(d, id);
    d.model.free(id);
    drain(d);
    if (unchanged_) {
      Divergence v;
      v.kind = Divergence::Kind::kRequestServed;
      v.segment = d.match.matched();
      v.request = requests_before;
      v.recorded_bytes = r.size;
      d.match.diverge(v);
    } else {
      ++d.result.recorded_failures_served;
      if (!d.result.first_served_failure_request && outside_model_code(role)) {
        d.result.first_served_failure_request = requests_before;
        d.result.first_served_failure_size = r.size;
      }
    }
  }
}

void TraceReplay::free_requested(Device& d, const format::BlockRecord& r) {
  settle(d, false, false);
  if (auto* e = unchanged_ ? d.blocks.find(r.address) : nullptr;
      e != nullptr && (e->value & kFreeRequestedBit) == 0) {
    d.allocated -= e->value & kSizeMask;
    d.recorded_roles[role_in(e->value)] -= e->value & kSizeMask;
    e->value |= kFreeRequestedBit;
  }
  if (d.failed.empty() || !d.failed.contains(r.address)) {
    model_freed(d, r.address);
    d.model.free_requested(r.address);
  }
  d.last_free_requested = r.address;
}

void TraceReplay::free_completed(Device& d, const format::BlockRecord& r) {
  settle(d, false, false);
  if (d.last_free_requested != r.address) ++d.result.deferred_frees;
  d.last_free_requested.reset();
  if (unchanged_) d.extents.release(r.address);
  if (auto* e = unchanged_ ? d.blocks.find(r.address) : nullptr; e != nullptr) {
    if ((e->value & kFreeRequestedBit) == 0) {
      d.allocated -= e->value & kSizeMask;
      d.recorded_roles[role_in(e->value)] -= e->value & kSizeMask;
    }
    d.blocks.erase(e);
  }
  if (!d.failed.empty() && d.failed.erase(r.address) > 0) return;
  model_freed(d, r.address);  // a free whose request the trace did not show
  d.model.free(r.address);
  drain(d);
}

// The model handed out a block of `bytes` to request `id`: the highest allocated by role.
void TraceReplay::model_allocated(Device& d, uint64_t id, uint64_t bytes, std::size_t role) {
  if (auto* old = d.model_blocks.find(id); old != nullptr) {  // its free was not recorded
    d.model_roles[role_in(old->value)] -= old->value & kSizeMask;
    d.model_blocks.erase(old);
  }
  d.model_blocks.insert(id, bytes | static_cast<uint64_t>(role) << kRoleShift);
  d.model_roles[role] += bytes;
  const ModelStats& stats = d.model.stats();
  if (stats.allocated_bytes > d.model_peak) {
    d.model_peak = stats.allocated_bytes;
    d.result.roles_at_peak = d.model_roles;
    d.result.roles_at_peak[static_cast<std::size_t>(Role::kAllocatorCache)] =
        stats.reserved_bytes - std::min(stats.reserved_bytes, stats.allocated_bytes);
  }
}

// Its free was requested: PyTorch's allocated bytes drop now.
void TraceReplay::model_freed(Device& d, uint64_t id) {
  if (auto* e = d.model_blocks.find(id); e != nullptr) {
    d.model_roles[role_in(e->value)] -= e->value & kSizeMask;
    d.model_blocks.erase(e);
  }
}

TraceReplayResult TraceReplay::finish() {
  TraceReplayResult out;
  out.block_events = block_events_;
  out.cuda_graph_captures = cuda_graph_captures_;
  for (auto& [ordinal, dp] : devices_) {
    Device& d = *dp;
    settle(d, false, false);
    d.match.finish(d.result.requests);
    DeviceReplayResult r = d.result;
    if (const auto t = totals_.find(ordinal); t != totals_.end()) r.total_bytes = t->second;
    r.recorded_max_allocated = d.max_allocated;
    r.recorded_max_reserved = d.max_reserved;
    r.recorded_ooms = d.ooms;
    r.recorded_capacity_bound = d.capacity_bound;
    if (!d.outside_samples.empty()) {
      // The median: a sample taken between a cudaMalloc and its segment's record counts that
      // segment as outside.
      auto mid =
          d.outside_samples.begin() + static_cast<std::ptrdiff_t>(d.outside_samples.size() / 2);
      std::nth_element(d.outside_samples.begin(), mid, d.outside_samples.end());
      r.sampled_outside_bytes = *mid;
    }
    r.stats = d.model.stats();
    r.recorded_segments = d.match.recorded_count();
    r.modelled_segments = d.match.modelled_count();
    r.matched_segments = d.match.matched();
    r.divergence = d.match.divergence();
    const Gaps& gaps = d.model.gaps();
    for (std::size_t g = 0; g < kGapCount; ++g) {
      const auto gap = static_cast<Gap>(g);
      uint64_t count = gaps.count(gap);
      if (gap == Gap::kSyntheticAddresses) count += r.synthetic_addresses;
      if (count > 0 || always_present(gap)) r.gaps.emplace_back(gap, count);
    }
    out.devices.push_back(std::move(r));
  }
  return out;
}

void TraceReplay::append_state(std::vector<uint64_t>& out) const {
  if (unchanged_) throw std::logic_error("TraceReplay::append_state: the unchanged replay");
  out.push_back(static_cast<uint64_t>(failed_) | static_cast<uint64_t>(expandable_seen_) << 1);
  out.push_back(pushed_.size());
  for (const auto& [thread, ranges] : pushed_) {
    out.insert(out.end(), {thread, ranges.size()});
    for (const bool phase : ranges) out.push_back(phase);
  }
  std::vector<uint64_t> sorted(started_.begin(), started_.end());
  std::sort(sorted.begin(), sorted.end());
  out.push_back(sorted.size());
  out.insert(out.end(), sorted.begin(), sorted.end());
  out.push_back(devices_.size());
  for (const auto& [ordinal, dp] : devices_) {
    const Device& d = *dp;
    out.insert(out.end(),
               {static_cast<uint64_t>(ordinal), d.reserved, d.capacity_bound, d.pending_released,
                d.pending_count, d.taken_since_request, static_cast<uint64_t>(d.failure_pending),
                d.last_free_requested.value_or(UINT64_MAX),
                static_cast<uint64_t>(d.last_free_requested.has_value()), d.next_synthetic});
    sorted.assign(d.failed.begin(), d.failed.end());
    std::sort(sorted.begin(), sorted.end());
    out.push_back(sorted.size());
    out.insert(out.end(), sorted.begin(), sorted.end());
    out.insert(out.end(), d.model_roles.begin(), d.model_roles.end());
    std::vector<std::pair<uint64_t, uint64_t>> blocks;
    d.model_blocks.for_each([&](uint64_t id, uint64_t value) { blocks.emplace_back(id, value); });
    std::sort(blocks.begin(), blocks.end());
    out.push_back(blocks.size());
    for (const auto& [id, value] : blocks) out.insert(out.end(), {id, value});
    d.model.append_state(out);
  }
}

void TraceReplay::append_summary(std::vector<uint64_t>& out) const {
  out.push_back(devices_.size());
  for (const auto& [ordinal, dp] : devices_) {
    const Device& d = *dp;
    out.insert(out.end(), {d.reserved, d.pending_count, d.failed.size(), d.model_blocks.size(),
                           d.next_synthetic});
    d.model.append_summary(out);
  }
}

uint64_t TraceReplay::failed_requests() const {
  uint64_t failed = 0;
  for (const auto& [ordinal, d] : devices_) failed += d->result.failed_requests;
  return failed;
}

void TraceReplay::visit_counters(const std::function<void(uint64_t&)>& visit) {
  visit(block_events_);
  visit(cuda_graph_captures_);
  for (auto& [ordinal, dp] : devices_) {
    Device& d = *dp;
    visit(d.ooms);
    visit(d.result.requests);
    visit(d.result.failed_requests);
    visit(d.result.recorded_failures_served);
    visit(d.result.requests_after_served_failure);
    visit(d.result.empty_cache_mirrored);
    visit(d.result.empty_cache_added);
    visit(d.result.allocator_releases);
    visit(d.result.deferred_frees);
    visit(d.result.synthetic_addresses);
    d.model.visit_counters(visit);
  }
}

TraceReplayResult replay_trace(std::span<const uint8_t> bytes, const std::string& name,
                               const ReplayOptions& options, format::PageAccess pages,
                               const std::function<RecordTap(uint64_t)>& also) {
  const format::HeaderCheck header = format::check_header(bytes);
  if (!header.ok) throw TraceError(name + ": " + header.error);
  format::TraceReader reader(bytes, header.header, std::move(pages));
  TraceReplay replay(options);
  const RecordTap tap = also ? also(reader.expected_records()) : RecordTap{};
  bool replaying = true;
  while (const format::Record* record = reader.next_record()) {
    if (tap) tap(*record);
    if (!replaying) continue;  // the tap reads on to the end
    replay.apply(*record);
    if (options.stop_at_failure && replay.failed()) {
      replaying = false;
      if (!tap) break;
    }
  }
  TraceReplayResult result = replay.finish();
  result.history_dropped = reader.window().dropped;
  for (DeviceReplayResult& d : result.devices) d.history_dropped = result.history_dropped;
  for (const format::ReadProblem& p : reader.problems())
    result.problems.push_back("byte " + std::to_string(p.offset) + ": " + p.reason);
  return result;
}

TraceReplayResult replay_trace_file(const std::string& path, const ReplayOptions& options) {
  MappedFile file(path);
  return replay_trace(file.bytes(), path, options, file.page_access());
}

}  // namespace gmt::analyzer::allocator
