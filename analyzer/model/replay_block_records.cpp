// SPDX-License-Identifier: Apache-2.0
// The replay of a caching allocator's block events (the state is BlockReplay's): the blocks'
// figures go to the views as the framework's allocated and reserved bytes, and the segments the
// allocator reported are told apart from the other driver allocations of their sites.
#include "analyzer/model/replay.h"

namespace gmt::analyzer {

void Replay::on(const format::BlockRecord& r) {
  summary_.duration_ns = std::max(summary_.duration_ns, r.time_ns);
  roles_.on_block(r);
  if (r.action == static_cast<uint32_t>(format::BlockAction::kAlloc)) {
    format::BlockRecord attributed = r;
    attributed.stack = backward_.stack_for(summary_, r.thread, r.stack);
    const bool captured = roles_.captured(r.address);
    blocks_.on(attributed, captured);
    if (captured) blocks_.graph_segment(r.allocator, r.device, r.address);
  } else {
    blocks_.on(r);
  }
  if (r.action == static_cast<uint32_t>(format::BlockAction::kSegmentAlloc)) {
    if (roles_.capturing(r.thread)) blocks_.graph_segment(r.allocator, r.device, r.address);
    if (const auto* e = live_.find(Key{Space::kAddress, r.address})) {
      site_rest_[e->site].stats->framework_segments = true;
    }
  }
  const uint64_t allocated = blocks_.allocated_bytes(r.device);
  const uint64_t reserved = blocks_.reserved_bytes(r.device);
  views_.framework_blocks(r.device, allocated, reserved, r.time_ns);
  if (timeline_) timeline_->set_framework(r.device, allocated, reserved, r.time_ns);
  if (r.action == static_cast<uint32_t>(format::BlockAction::kOom)) note_block_oom(r);
  if (r.action == static_cast<uint32_t>(format::BlockAction::kAlloc)) blocks_in_plateau(r.device);
}

void Replay::blocks_in_plateau(int ordinal) {
  const auto plateau = block_plateaus_.find(ordinal);
  if (plateau == block_plateaus_.end()) return;
  const uint64_t allocated = blocks_.allocated_bytes(ordinal);
  if (plateau->second && *plateau->second >= allocated) return;
  plateau->second = allocated;
  take_peak_rows(ordinal);
}

void Replay::take_peak_rows(int ordinal) {
  const uint64_t moment = ++peak_moment_count_;
  peak_moments_[ordinal] = moment;
  if (planned_peaks_) {
    const auto planned = planned_peaks_->find(ordinal);
    if (planned == planned_peaks_->end() || planned->second != moment) return;
  } else {
    const uint64_t work = blocks_.live_blocks(ordinal);
    if (snapshot_work_ + work > kSnapshotWorkPerRecord * record_index_ + (1u << 20)) return;
    snapshot_work_ += work;
  }
  peaks_taken_[ordinal] = moment;
  take_block_rows(ordinal, kRolesAtPeak);
}

bool Replay::peak_pass_needed() const {
  if (planned_peaks_) return false;
  for (const auto& [ordinal, moment] : peak_moments_) {
    const auto taken = peaks_taken_.find(ordinal);
    if (taken == peaks_taken_.end() || taken->second != moment) return true;
  }
  return false;
}

void Replay::on(const format::ScopeRecord& r) {
  roles_.on(r);
  if (roles_at_exit_taken_ || !roles_.program_ended()) return;
  // The program's code is done: what it holds now is what it held at its end, before the
  // interpreter's teardown frees it.
  roles_at_exit_taken_ = true;
  roles_exit_time_ns_ = r.time_ns;
  for (const auto& [ordinal, d] : summary_.devices) take_block_rows(ordinal, kRolesAtExit);
}

void Replay::take_block_rows(int ordinal, int role_slot) {
  std::vector<PeakSite> rows = block_rows_on(ordinal);
  if (!rows.empty()) take_role_snapshot(ordinal, role_slot, rows);
  if (role_slot != kRolesAtPeak) return;
  // The views at the peak are of the same moment as its rows.
  if (blocks_.has_blocks(ordinal)) {
    views_.framework_at_peak(ordinal, blocks_.allocated_bytes(ordinal),
                             blocks_.reserved_bytes(ordinal), summary_.duration_ns);
  }
  block_peaks_.insert_or_assign(ordinal, std::move(rows));
}

void Replay::take_role_snapshot(int ordinal, int role_slot, const std::vector<PeakSite>& rows) {
  std::vector<RoleTracker::Block> blocks;
  blocks_.for_each_live_block(ordinal, [&](uint64_t address, uint64_t size, uint32_t stack) {
    blocks.push_back({address, size, stack});
  });
  roles_.snapshot(ordinal, role_slot, blocks, rows);
}

void Replay::end_block_plateaus(bool close) {
  for (const auto& [ordinal, taken] : block_plateaus_) {
    if (!taken) take_peak_rows(ordinal);
  }
  if (close) block_plateaus_.clear();
}

std::vector<PeakSite> Replay::block_rows_on(int ordinal) const {
  if (!blocks_.has_blocks(ordinal)) return {};
  std::vector<PeakSite> driver;
  for (std::size_t i = 0; i < sites_.size(); ++i) {
    const SiteSlot& slot = sites_[i];
    if (slot.device != ordinal || slot.live_resident_bytes == 0) continue;
    driver.push_back(
        PeakSite{site_rest_[i].stats->stack, slot.live_resident_bytes, slot.live_resident_count});
  }
  return blocks_.rows_on(ordinal, std::move(driver),
                         [&](uint64_t address) -> std::optional<std::pair<uint32_t, uint64_t>> {
                           const auto* e = live_.find(Key{Space::kAddress, address});
                           if (e == nullptr || !format::counts_toward_device_usage(e->kind()) ||
                               sites_[e->site].device != ordinal)
                             return std::nullopt;
                           return std::pair{site_rest_[e->site].stats->stack, e->size};
                         });
}

void Replay::note_block_oom(const format::BlockRecord& r) {
  constexpr std::size_t kHolders = 10;
  if (!open_failure_ || *open_failure_ >= summary_.failures.size()) return;
  FailedAllocation& f = summary_.failures[*open_failure_];
  if (f.device != r.device || f.allocator >= 0) return;
  f.allocator = static_cast<int>(r.allocator);
  f.allocator_requested_bytes = r.size;
  const auto [free_bytes, largest] = blocks_.free_space(r.allocator, r.device);
  f.cache_free_bytes = free_bytes;
  f.largest_free_block_bytes = largest;
  f.fragmented = free_bytes >= r.size && largest < r.size;
  std::vector<PeakSite> rows = block_rows_on(r.device);
  if (!rows.empty()) {
    // Each snapshot keeps its blocks' facts to the end: the first failures only.
    if (*open_failure_ < kFailuresWithRoles)
      take_role_snapshot(r.device, kRolesAtFailure + static_cast<int>(*open_failure_), rows);
    if (rows.size() > kHolders) rows.resize(kHolders);
    f.holders = std::move(rows);
  }
}

void Replay::finish_blocks() {
  for (auto& [key, site] : summary_.sites) {
    site.framework_segment_bytes = 0;
    site.framework_segment_count = 0;
  }
  blocks_.for_each_live_segment([&](uint64_t address) {
    if (const auto* e = live_.find(Key{Space::kAddress, address})) {
      SiteStats& site = *site_rest_[e->site].stats;
      site.framework_segments = true;
      site.framework_segment_bytes += e->size;
      ++site.framework_segment_count;
    }
  });
  blocks_.finish(summary_);
}

}  // namespace gmt::analyzer
