// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/replay.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <variant>

#include "format/trace_reader.h"

namespace gmt::analyzer {

using format::Api;
using format::MemoryKind;

Replay::Space Replay::space_of(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kVmmPhysical:
    case MemoryKind::kHostVmm:
      return Space::kHandle;
    case MemoryKind::kArray:
      return Space::kArray;
    case MemoryKind::kVmmReservation:
      return Space::kReservation;
    default:
      return Space::kAddress;
  }
}

Replay::Space Replay::space_freed_by(Api api) {
  switch (api) {
    case Api::kCuMemRelease:
      return Space::kHandle;
    case Api::kCuArrayDestroy:
    case Api::kCuMipmappedArrayDestroy:
      return Space::kArray;
    case Api::kCuMemAddressFree:
      return Space::kReservation;
    default:
      return Space::kAddress;
  }
}

bool Replay::per_device(MemoryKind kind) {
  return !format::host_memory(kind) && kind != MemoryKind::kVmmReservation;
}

DeviceSummary& Replay::device_slowly(int ordinal) {
  DeviceSummary& d = summary_.devices[ordinal];
  d.device = ordinal;
  if (ordinal >= 0 && ordinal < kCachedDevices) {
    device_slots_[static_cast<std::size_t>(ordinal)].summary = &d;  // std::map: it stays put
  }
  return d;
}

// Fills the slot the inline usage() looks in.
KindUsage& Replay::usage_slowly(int ordinal, MemoryKind kind) {
  const auto k = static_cast<std::size_t>(kind);
  if (k >= format::kMemoryKindCount) {
    return per_device(kind) ? device(ordinal).by_kind[kind] : summary_.process_kinds[kind];
  }
  if (!per_device(kind)) {
    if (process_kinds_[k] == nullptr) process_kinds_[k] = &summary_.process_kinds[kind];
    return *process_kinds_[k];
  }
  KindUsage& u = device(ordinal).by_kind[kind];
  if (ordinal >= 0 && ordinal < kCachedDevices) {
    device_slots_[static_cast<std::size_t>(ordinal)].kinds[k] = &u;
  }
  return u;
}

void Replay::apply(const format::Record& record) {
  ++summary_.record_counts[record.index()];
  // Allocations and frees first, by hand: std::visit's jump through a table is a branch the
  // processor mispredicts whenever one follows the other.
  if (const auto* alloc = std::get_if<format::AllocRecord>(&record)) {
    on(*alloc);
  } else if (const auto* free = std::get_if<format::FreeRecord>(&record)) {
    on(*free);
  } else {
    std::visit([this](const auto& r) { on(r); }, record);
  }
  applied([&record] { return format::record_time(record); });
}

void Replay::apply_events(std::span<const format::MemoryEvent* const> events) {
  // Far enough ahead for a miss to memory to be served before the event is replayed (8 events
  // hide it; the lookup of 10 M events with 500 000 allocations live, 0.74 s with the line asked
  // for one record ahead, takes 0.65).
  constexpr std::size_t kAhead = 8;
  const std::size_t n = events.size();
  for (std::size_t i = 0; i < std::min(n, kAhead); ++i) prefetch(events[i]->record.address);
  // Record counts by the variant's index: RecordType numbers its alternatives from 1.
  constexpr std::size_t kAllocIndex = static_cast<std::size_t>(format::RecordType::kAlloc) - 1;
  constexpr std::size_t kFreeIndex = static_cast<std::size_t>(format::RecordType::kFree) - 1;
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) prefetch(events[i + kAhead]->record.address);
    const format::MemoryEvent& e = *events[i];
    if (e.type == format::RecordType::kAlloc) {
      ++summary_.record_counts[kAllocIndex];
      on(e.record);
    } else {
      ++summary_.record_counts[kFreeIndex];
      on_free(e.record);
    }
    applied([&e] { return e.record.time_ns; });
  }
}

// A new peak is the state after the whole record: a new epoch starts after it.
void Replay::start_peak_epochs() {
  for (int ordinal : peaked_) {
    ++peak_epochs_[device_index(ordinal)];
    views_.at_peak(ordinal);
    block_plateaus_.insert_or_assign(ordinal, std::nullopt);
  }
  peaked_.clear();
}

void Replay::take_samples(uint64_t time_ns) {
  while (samples_taken_ < sample_positions_.size() &&
         sample_positions_[samples_taken_] == record_index_) {
    take_sample(time_ns);
  }
  next_sample_at_ =
      samples_taken_ < sample_positions_.size() ? sample_positions_[samples_taken_] : UINT64_MAX;
}

uint32_t Replay::device_index(int ordinal) {
  const auto [it, added] =
      device_indices_.try_emplace(ordinal, static_cast<uint32_t>(peak_epochs_.size()));
  if (added) peak_epochs_.push_back(0);
  return it->second;
}

uint64_t Replay::site_resident_bytes(uint64_t key) const {
  const auto* e = site_indices_.find(key);
  return e != nullptr ? sites_[e->value].live_resident_bytes : 0;
}

std::vector<PeakSite> Replay::top_sites_live_on(int ordinal, std::size_t most) const {
  // Kept in order as the sites go by, the first `most` only: a trace with many failures asks at
  // every one of them, and most sites hold less than the last one kept.
  const auto before = [](const PeakSite& a, const PeakSite& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack < b.stack;
  };
  std::vector<PeakSite> top;
  if (most == 0) return top;
  top.reserve(most + 1);
  for (std::size_t i = 0; i < sites_.size(); ++i) {
    const SiteSlot& slot = sites_[i];
    if (slot.device != ordinal || slot.live_resident_bytes == 0) continue;
    // The count is of device-resident allocations only, like the bytes.
    const PeakSite site{site_rest_[i].stats->stack, slot.live_resident_bytes,
                        slot.live_resident_count};
    if (top.size() == most && !before(site, top.back())) continue;
    top.insert(std::upper_bound(top.begin(), top.end(), site, before), site);
    if (top.size() > most) top.pop_back();
  }
  return top;
}

[[gnu::always_inline]] inline void Replay::save_for_peak(uint32_t site) {
  SiteSlot& slot = sites_[site];
  const uint64_t epoch = peak_epochs_[slot.device_index];
  if (slot.saved_epoch == epoch) return;
  slot.saved_epoch = epoch;
  site_rest_[site].resident_bytes_at_peak = slot.live_resident_bytes;
  site_rest_[site].resident_count_at_peak = slot.live_resident_count;
}

void Replay::flush_sizes() {
  // The histograms are spread over the sites' statistics: ask for the cells a few entries on.
  constexpr std::size_t kAhead = 16;
  const std::size_t n = size_log_.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) {
      const uint64_t later = size_log_[i + kAhead];
      prefetch_line(&site_rest_[later >> 8].stats->size_histogram[later & 0xff]);
    }
    const uint64_t entry = size_log_[i];
    ++site_rest_[entry >> 8].stats->size_histogram[entry & 0xff];
  }
  size_log_.clear();
}

void Replay::sync_sites() {
  flush_sizes();
  for (std::size_t i = 0; i < sites_.size(); ++i) {
    const SiteSlot& slot = sites_[i];
    SiteStats& site = *site_rest_[i].stats;
    site.live_bytes = slot.live_bytes;
    site.live_resident_bytes = slot.live_resident_bytes;
    site.live_count = slot.live_count;
    site.live_resident_count = slot.live_resident_count;
    site.allocations = slot.allocations;
    site.temporaries = slot.temporaries;
  }
}

// What top_sites_live_on() would have said, of every site, at the record that first reached the
// device's peak.
std::vector<PeakSite> Replay::sites_at_peak(int ordinal) const {
  std::vector<PeakSite> sites;
  const auto index = device_indices_.find(ordinal);
  for (std::size_t i = 0; i < sites_.size(); ++i) {
    const SiteSlot& slot = sites_[i];
    const SiteRest& rest = site_rest_[i];
    if (rest.stats->device != ordinal) continue;
    const bool changed =
        index != device_indices_.end() && slot.saved_epoch == peak_epochs_[index->second];
    const uint64_t bytes = changed ? rest.resident_bytes_at_peak : slot.live_resident_bytes;
    const uint64_t count = changed ? rest.resident_count_at_peak : slot.live_resident_count;
    if (bytes != 0) sites.push_back(PeakSite{rest.stats->stack, bytes, count});
  }
  std::sort(sites.begin(), sites.end(), [](const PeakSite& a, const PeakSite& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack < b.stack;
  });
  return sites;
}

void Replay::take_sample(uint64_t time_ns) {
  for (std::size_t i = 0; i < sites_.size(); ++i) {
    const SiteSlot& slot = sites_[i];
    SiteStats& site = *site_rest_[i].stats;
    site.live_samples.resize(samples_taken_, 0);  // a site born later was empty before
    site.live_samples.push_back(slot.live_bytes);
    site.live_count_samples.resize(samples_taken_, 0);
    site.live_count_samples.push_back(slot.live_count);
  }
  blocks_.take_sample(samples_taken_);
  summary_.sample_times.push_back(std::max(time_ns, now_ns_));
  ++samples_taken_;
}

void Replay::finish() {
  sync_sites();
  end_block_plateaus(false);
  for (auto& [ordinal, d] : summary_.devices) {
    if (d.peak_bytes > 0) d.peak_sites = sites_at_peak(ordinal);
    const auto rows = block_peaks_.find(ordinal);
    const auto moment = peak_moments_.find(ordinal);
    const auto taken = peaks_taken_.find(ordinal);
    // The peak's last moment not taken (peak_pass_needed()): no rows rather than older ones.
    const bool current = moment == peak_moments_.end() ||
                         (taken != peaks_taken_.end() && taken->second == moment->second);
    d.peak_block_sites = rows != block_peaks_.end() && d.peak_bytes > 0 && current
                             ? rows->second
                             : std::vector<PeakSite>{};
    if (!d.peak_block_sites.empty()) d.roles_at_peak = roles_.resolve(ordinal, kRolesAtPeak);
    if (!roles_at_exit_taken_) take_block_rows(ordinal, kRolesAtExit);
    d.roles_at_exit = roles_.resolve(ordinal, kRolesAtExit);
    if (d.roles_at_exit) {
      d.roles_at_exit->at_program_end = roles_at_exit_taken_;
      d.roles_at_exit->time_ns = roles_at_exit_taken_ ? roles_exit_time_ns_ : summary_.duration_ns;
    }
    if (d.roles_at_peak) d.roles_at_peak->time_ns = d.peak_time_ns;
  }
  for (std::size_t i = 0; i < summary_.failures.size(); ++i) {
    FailedAllocation& f = summary_.failures[i];
    f.roles = roles_.resolve(f.device, kRolesAtFailure + static_cast<int>(i));
    if (f.roles) f.roles->time_ns = f.time_ns;
  }
  summary_.roles_recorded = roles_.recorded();
  summary_.role_tags_unmatched = roles_.unmatched_tags();
  if (timeline_) summary_.timeline = timeline_->finish(summary_.duration_ns);
  finish_blocks();
  finish_reservations();
  finish_views();
}

void Replay::finish_reservations() {
  std::map<std::pair<int, uint32_t>, ReservationGroup> groups;  // by device and stack
  live_.for_each_entry([&](const LiveEntry& e) {
    if (e.kind() != MemoryKind::kVmmReservation) return;
    const auto known = reservations_.find(e.address);
    const int device = known != reservations_.end() ? known->second.device : -1;
    const uint32_t stack = site_rest_[e.site].stats->stack;
    ReservationGroup& g = groups[{device, stack}];
    g.device = device;
    g.stack = stack;
    g.bytes += e.size;
    ++g.count;
  });
  summary_.reservations.clear();
  for (const auto& [key, g] : groups) summary_.reservations.push_back(g);
  std::stable_sort(
      summary_.reservations.begin(), summary_.reservations.end(),
      [](const ReservationGroup& a, const ReservationGroup& b) { return a.bytes > b.bytes; });
}

// The site's index from the map of every site, creating it the first time; remembered by stack
// id for the inline site_index().
uint32_t Replay::site_index_slowly(int device, uint32_t stack) {
  const uint64_t key = site_key(device, stack);
  const auto* e = site_indices_.find(key);
  const uint32_t index = e != nullptr ? e->value : new_site(key, device, stack);
  if (static_cast<unsigned>(device) < kCachedDevices && stack < kDirectStacks) {
    std::vector<uint32_t>& sites = device_slots_[static_cast<std::size_t>(device)].sites_by_stack;
    if (stack >= sites.size()) {
      // Doubling, but never past kDirectStacks: at most 1 MiB per device.
      const std::size_t size = std::max<std::size_t>(stack + 1, 2 * sites.size());
      sites.resize(std::min<std::size_t>(size, kDirectStacks), kNoSite);
    }
    sites[stack] = index;
  }
  return index;
}

// A site seen for the first time: its slot and its SiteStats.
uint32_t Replay::new_site(uint64_t key, int device, uint32_t stack) {
  SiteStats& site = summary_.sites[key];  // unordered_map: the address stays
  site.device = device;
  site.stack = stack;
  SiteSlot slot;
  slot.device_index = device_index(device);
  slot.device = device;
  sites_.push_back(slot);
  site_rest_.push_back(SiteRest{&site});
  const auto index = static_cast<uint32_t>(sites_.size() - 1);
  site_indices_.insert(key, index);
  return index;
}

[[gnu::always_inline]] inline void Replay::site_allocated(const LiveAllocation& a) {
  SiteSlot& slot = sites_[a.site];
  ++slot.allocations;
  size_log_.push_back(static_cast<uint64_t>(a.site) << 8 | std::bit_width(a.size));
  if (size_log_.size() == kSizeLogEntries) [[unlikely]]
    flush_sizes();
  // Address space is no memory: it stays out of the site's live figures, and so out of leaks
  // and their growth (finish_reservations() reports it apart).
  if (a.kind == MemoryKind::kVmmReservation) [[unlikely]]
    return;
  slot.live_bytes += a.size;
  ++slot.live_count;
  if (format::counts_toward_device_usage(a.kind)) {
    save_for_peak(a.site);
    slot.live_resident_bytes += a.size;
    ++slot.live_resident_count;
  }
}

[[gnu::always_inline]] inline void Replay::site_ended(const LiveAllocation& a, bool by_teardown) {
  SiteSlot& slot = sites_[a.site];
  // Reservations are in no live figure (site_allocated()) and outlive contexts.
  if (a.kind != MemoryKind::kVmmReservation) [[likely]] {
    slot.live_bytes -= a.size;
    --slot.live_count;
  }
  if (format::counts_toward_device_usage(a.kind)) {
    save_for_peak(a.site);
    slot.live_resident_bytes -= a.size;
    --slot.live_resident_count;
  }
  if (by_teardown) {
    SiteStats& site = *site_rest_[a.site].stats;
    site.torn_down_bytes += a.size;
    ++site.torn_down_count;
    if (format::counts_toward_device_usage(a.kind)) site.torn_down_resident_bytes += a.size;
  } else if (now_ns_ - a.time_ns < kTemporaryNs) {
    ++slot.temporaries;
  }
}

bool Replay::retry_of_open_failure(const format::AllocFailedRecord& r) const {
  if (!open_failure_ || *open_failure_ >= summary_.failures.size()) return false;
  const FailedAllocation& f = summary_.failures[*open_failure_];
  // Once the allocator has reported its OOM, the request is over: a new one may be the same.
  // Only a caching allocator retries (after releasing its cache): without one on the device, two
  // failures are two requests (a program that asks twice, through two runtimes say).
  return f.allocator < 0 && blocks_.has_blocks(r.device) && r.thread == open_failure_thread_ &&
         f.device == r.device && f.kind == r.kind &&
         open_failure_api_ == static_cast<uint32_t>(r.api) && f.requested_bytes == r.size;
}

void Replay::end_open_failure(const format::AllocRecord& r) {
  if (r.thread != open_failure_thread_ && *open_failure_ < summary_.failures.size() &&
      summary_.failures[*open_failure_].device != r.device)
    return;
  open_failure_.reset();
}

bool Replay::note_failure(const format::AllocFailedRecord& r) {
  constexpr std::size_t kHolders = 10;
  if (retry_of_open_failure(r)) {
    FailedAllocation& f = summary_.failures[*open_failure_];
    const uint64_t live = device(r.device).live_bytes;
    f.retries.push_back({r.time_ns, f.live_bytes > live ? f.live_bytes - live : 0, r.error});
    // The request's state is the last attempt's: what the allocator's release left.
    f.live_bytes = live;
    f.error = r.error;
    f.holders = top_sites_live_on(r.device, kHolders);
    f.views.reset();  // the sampler reads again after this attempt
    return false;
  }
  if (summary_.failures.size() >= TraceSummary::kFailuresKept) {
    ++summary_.failures_not_kept;
    return true;
  }
  FailedAllocation f;
  f.time_ns = r.time_ns;
  f.device = r.device;
  f.kind = r.kind;
  f.api = format::called_api(r.api, r.public_api);
  f.driver_api = r.api;
  f.requested_bytes = r.size;
  f.error = r.error;
  // As a successful allocation's: an autograd thread's failed request is shown at backward().
  f.stack = backward_.driver_stack_for(summary_, r.thread, r.stack);
  if (per_device(r.kind)) {
    f.live_bytes = device(r.device).live_bytes;
    f.holders = top_sites_live_on(r.device, kHolders);
    open_failure_ = summary_.failures.size();
    open_failure_thread_ = r.thread;
    open_failure_api_ = static_cast<uint32_t>(r.api);
  }
  summary_.failures.push_back(std::move(f));
  return true;
}

[[gnu::always_inline]] inline void Replay::saw_event(uint64_t time_ns) {
  if (!block_plateaus_.empty()) [[unlikely]]
    end_block_plateaus();
  ++summary_.events;
  // The latest time, not the last one: a damaged chunk can go back in time, and the second
  // pass sizes the timeline by the duration, so no record may lie past it.
  summary_.duration_ns = std::max(summary_.duration_ns, time_ns);
  now_ns_ = time_ns;
}

[[gnu::always_inline]] inline void Replay::add_usage(int ordinal, MemoryKind kind, uint64_t bytes,
                                                     uint64_t time_ns) {
  KindUsage& u = usage(ordinal, kind);
  u.live_bytes += bytes;
  u.peak_bytes = std::max(u.peak_bytes, u.live_bytes);
  if (timeline_ && per_device(kind)) timeline_->set(ordinal, kind, u.live_bytes, time_ns);
  if (!format::counts_toward_device_usage(kind)) return;
  DeviceSummary& d = device(ordinal);
  d.live_bytes += bytes;
  if (timeline_) timeline_->set(ordinal, std::nullopt, d.live_bytes, time_ns);
  const bool new_peak = d.live_bytes > d.peak_bytes && peaks_counted_;
  if (new_peak) {
    d.peak_bytes = d.live_bytes;
    d.peak_time_ns = time_ns;
    d.peak_record = record_index_;
    peaked_.push_back(ordinal);
  }
  views_.usage_changed(ordinal, d.live_bytes, time_ns, new_peak);
}

[[gnu::always_inline]] inline void Replay::remove_usage(int ordinal, MemoryKind kind,
                                                        uint64_t bytes) {
  KindUsage& u = usage(ordinal, kind);
  u.live_bytes -= bytes;
  if (timeline_ && per_device(kind)) timeline_->set(ordinal, kind, u.live_bytes, now_ns_);
  if (!format::counts_toward_device_usage(kind)) return;
  DeviceSummary& d = device(ordinal);
  d.live_bytes -= bytes;
  if (timeline_) timeline_->set(ordinal, std::nullopt, d.live_bytes, now_ns_);
  views_.usage_changed(ordinal, d.live_bytes, now_ns_, false);
}

void Replay::LiveEntry::set(const Key& key, const LiveAllocation& a) {
  static_assert(format::kMemoryKindCount <= 32, "the kind has 5 bits");
  constexpr uint64_t kMaxTime = (uint64_t{1} << 56) - 1;
  address = key.value;
  size = a.size;
  time_tags = std::min(a.time_ns, kMaxTime) << 8 | static_cast<uint64_t>(a.kind) << 3 |
              static_cast<uint64_t>(key.space) << 1;
  site = a.site;
  context = a.context;
}

[[gnu::always_inline]] inline Replay::LiveAllocation Replay::unpack(const LiveEntry& e) const {
  return LiveAllocation{sites_[e.site].device, e.kind(), e.size, e.context, e.site, e.time_ns()};
}

[[gnu::always_inline]] inline void Replay::end_allocation(LiveMap::Entry* entry, bool by_teardown) {
  account_end(*entry, by_teardown);
  live_.erase(entry);
}

// Everything an allocation's end changes but the live map.
[[gnu::always_inline]] inline void Replay::account_end(const LiveEntry& entry, bool by_teardown) {
  const LiveAllocation a = unpack(entry);
  const Key key = entry.entry_key();
  if (per_device(a.kind)) {
    DeviceSummary& d = device(a.device);
    ++(by_teardown ? d.teardown_free_count : d.free_count);
    --d.live_count;
  }
  remove_usage(a.device, a.kind, a.size);
  site_ended(a, by_teardown);
  if (key.space == Space::kHandle) handles_.erase(key.value);
}

void Replay::on(const format::ProcessInfoRecord& r) {
  summary_.pid = r.pid;
  summary_.ppid = r.ppid;
  summary_.host = r.host;
  summary_.argv = r.argv;
  summary_.env = r.env;
  summary_.rank = rank_of(r.env);
  summary_.wall_start_ns = r.wall_start_ns;
  summary_.mono_start_ns = r.mono_start_ns;
}

// Inline (with on_free()): into apply_events(), for every event, 1 % fewer instructions.
[[gnu::always_inline]] inline void Replay::on(const format::AllocRecord& r) {
  saw_event(r.time_ns);
  const Key key{space_of(r.kind), r.address};
  const uint32_t stack = backward_.driver_stack_for(summary_, r.thread, r.stack);
  const LiveAllocation a{r.device, r.kind, r.size, r.context, site_index(r.device, stack),
                         r.time_ns};
  // The same key live twice means we missed a free (one made before tracing, or by an API not
  // hooked): the old allocation is gone, or the driver could not have reused its address.
  if (auto [e, added] = live_.try_insert(key, a); !added) {
    account_end(*e, false);
    e->set(key, a);
  }
  site_allocated(a);
  if (open_failure_) [[unlikely]]
    end_open_failure(r);
  if (const auto k = static_cast<std::size_t>(r.kind); k < summary_.allocs_by_kind.size())
    ++summary_.allocs_by_kind[k];
  ++summary_.allocs_by_api[static_cast<std::size_t>(format::called_api(r.api, r.public_api))];
  if (space_of(r.kind) == Space::kHandle) handles_[r.address] = HandleState{};
  if (r.kind == MemoryKind::kVmmReservation) [[unlikely]]
    reservations_.insert_or_assign(r.address, Reservation{r.size, r.device});
  if (per_device(r.kind)) {
    DeviceSummary& d = device(r.device);
    ++d.alloc_count;
    ++d.live_count;
  }
  add_usage(r.device, r.kind, r.size, r.time_ns);
}

void Replay::release_handle_if_unused(uint64_t handle) {
  auto state = handles_.find(handle);
  if (state == handles_.end() || state->second.references > 0 || state->second.mappings > 0) return;
  if (auto* e = live_.find(Key{Space::kHandle, handle})) end_allocation(e, false);
}

template <class R>
[[gnu::always_inline]] inline void Replay::on_free(const R& r) {
  saw_event(r.time_ns);
  ++summary_.frees_by_api[static_cast<std::size_t>(format::called_api(r.api, r.public_api))];
  const Space space = space_freed_by(r.api);
  if (space == Space::kHandle) {
    // Released memory stays until its last mapping is gone.
    auto state = handles_.find(r.address);
    if (state == handles_.end() || state->second.references == 0) {
      ++summary_.unmatched_frees;
      return;
    }
    --state->second.references;
    release_handle_if_unused(r.address);
    return;
  }
  auto* e = live_.find(Key{space, r.address});
  if (e == nullptr) {
    ++summary_.unmatched_frees;
    return;
  }
  if (space == Space::kReservation) [[unlikely]]
    reservations_.erase(r.address);
  end_allocation(e, false);
}

void Replay::on(const format::AllocFailedRecord& r) {
  saw_event(r.time_ns);
  if (const auto k = static_cast<std::size_t>(r.kind); k < summary_.failures_by_kind.size())
    ++summary_.failures_by_kind[k];
  if (!note_failure(r)) return;
  if (per_device(r.kind)) {
    ++device(r.device).failed_alloc_count;
  } else {
    ++summary_.failed_host_alloc_count;
  }
}

void Replay::on(const format::EndRecord& r) {
  summary_.duration_ns = std::max(summary_.duration_ns, r.time_ns);
  summary_.end = TraceEnd::kExited;
}

void Replay::on(const format::ContextRecord&) {}

void Replay::on(const format::ContextDestroyedRecord& r) {
  saw_event(r.time_ns);
  // Which ones first, then end them: ending one moves entries of the map. The order they end
  // in changes no figure (each only takes its own bytes away).
  std::vector<Key> owned;
  live_.for_each_entry([&](const LiveEntry& e) {
    if (e.context == r.id && format::owned_by_context(e.kind())) owned.push_back(e.entry_key());
  });
  for (const Key& key : owned) end_allocation(live_.find(key), true);
}

void Replay::on(const format::MapRecord& r) {
  saw_event(r.time_ns);
  int ordinal = r.device;
  bool host = false;
  if (const auto* physical = live_.find(Key{Space::kHandle, r.handle})) {
    ordinal = sites_[physical->site].device;
    host = format::host_memory(physical->kind());
  }
  if (auto state = handles_.find(r.handle); state != handles_.end()) ++state->second.mappings;
  // Mappings of host memory keep their handle alive but are no device's address space.
  mappings_[r.address] = Mapping{r.size, r.handle, ordinal, !host};
  if (!host) add_usage(ordinal, MemoryKind::kVmmMapping, r.size, r.time_ns);
  // The reservation it maps into is that device's address space.
  if (auto it = reservations_.upper_bound(r.address);
      !host && ordinal >= 0 && it != reservations_.begin()) {
    --it;
    if (r.address - it->first < it->second.size) it->second.device = ordinal;
  }
}

void Replay::on(const format::UnmapRecord& r) {
  saw_event(r.time_ns);
  const uint64_t end = r.address + r.size;
  for (auto it = mappings_.lower_bound(r.address); it != mappings_.end() && it->first < end;) {
    const Mapping m = it->second;
    it = mappings_.erase(it);
    if (m.counted) remove_usage(m.device, MemoryKind::kVmmMapping, m.size);
    if (auto state = handles_.find(m.handle);
        state != handles_.end() && state->second.mappings > 0) {
      --state->second.mappings;
      release_handle_if_unused(m.handle);
    }
  }
}

void Replay::on(const format::StackRecord& r) {
  summary_.stacks[r.id] = r.frames;
  summary_.stack_module_epoch[r.id] = summary_.modules.size();
  if (!r.python.empty()) summary_.python_stacks[r.id] = r.python;
}

void Replay::on(const format::ThreadRecord& r) {
  summary_.threads[r.tid] = r.name;
}

void Replay::on(const format::PythonCodeRecord& r) {
  summary_.python_code[r.id] = {r.name, r.file};
}

void Replay::on(const format::ModuleRecord& r) {
  summary_.modules.push_back(r);
}

void Replay::on(const format::RetainHandleRecord& r) {
  saw_event(r.time_ns);
  if (auto state = handles_.find(r.handle); state != handles_.end()) ++state->second.references;
}

}  // namespace gmt::analyzer
