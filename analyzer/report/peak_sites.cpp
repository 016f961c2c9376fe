// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/peak_sites.h"

#include <algorithm>
#include <numeric>

#include "analyzer/model/owner_library.h"
#include "analyzer/model/roles/outside_roles.h"
#include "analyzer/report/frames/stack_frames.h"

namespace gmt::analyzer {

namespace {

// How many rows are symbolized for each row shown, for merge_alike.
constexpr std::size_t kMergeCandidatesPerRow = 4;

// A peak row's bytes by role: the cache's are the allocator's cache; a caching allocator's blocks
// take their roles from the peak's role table (blocks it has no facts of are unknown); a driver
// allocation's, its owner's.
std::array<uint64_t, kRoleCount> roles_of(const PeakSite& site, const RoleBreakdown& peak,
                                          OwnerLibraryCache& owners) {
  std::array<uint64_t, kRoleCount> roles{};
  const auto slot = [&](Role role) -> uint64_t& { return roles[static_cast<std::size_t>(role)]; };
  if (site.cache) {
    slot(site.graph ? Role::kCudaGraph : Role::kAllocatorCache) = site.bytes;
  } else if (site.allocator < 0) {
    slot(outside_role(owners.of(site.stack))) = site.bytes;
  } else {
    const auto& stacks = peak.block_stacks;
    const auto it = std::lower_bound(
        stacks.begin(), stacks.end(), site.stack,
        [](const RoleBreakdown::StackRoles& s, uint32_t stack) { return s.stack < stack; });
    if (it != stacks.end() && it->stack == site.stack) roles = it->bytes;
    const uint64_t placed = std::accumulate(roles.begin(), roles.end(), uint64_t{0});
    if (placed < site.bytes) slot(Role::kUnknown) += site.bytes - placed;
  }
  return roles;
}

// Rows whose stacks read alike once symbolized are one row (a reader could not tell them apart):
// one line's calls the compiler made twice, as an unrolled loop's. Cache rows stay apart.
void merge_alike(std::vector<ResolvedSite>& rows) {
  std::vector<ResolvedSite> merged;
  for (ResolvedSite& row : rows) {
    auto same = row.cache
                    ? merged.end()
                    : std::find_if(merged.begin(), merged.end(), [&](const ResolvedSite& m) {
                        return !m.cache && m.allocator == row.allocator && m.frames == row.frames;
                      });
    if (same == merged.end()) {
      merged.push_back(std::move(row));
      continue;
    }
    same->bytes += row.bytes;
    same->count += row.count;
    for (std::size_t r = 0; r < kRoleCount; ++r) same->roles[r] += row.roles[r];
  }
  std::stable_sort(merged.begin(), merged.end(),
                   [](const ResolvedSite& a, const ResolvedSite& b) { return a.bytes > b.bytes; });
  rows = std::move(merged);
}

}  // namespace

std::vector<std::string> resolve_peak_sites(TraceSummary& trace, std::size_t top) {
  // Rows that read alike are merged: more are symbolized than shown, so that merging leaves
  // `top` rows where there are that many.
  const std::size_t candidates = top * kMergeCandidatesPerRow;
  std::vector<uint32_t> wanted;
  for (auto& [ordinal, device] : trace.devices) {
    const std::vector<PeakSite>& sites = device.shown_peak_sites();
    for (std::size_t i = 0; i < sites.size() && i < candidates; ++i)
      wanted.push_back(sites[i].stack);
  }
  std::vector<std::string> warnings;
  ResolvedStacks resolved = resolve_stacks(trace, wanted, warnings);
  OwnerLibraryCache owners(trace);
  for (auto& [ordinal, device] : trace.devices) {
    device.top_sites.clear();
    const std::vector<PeakSite>& sites = device.shown_peak_sites();
    for (std::size_t i = 0; i < sites.size() && i < candidates; ++i) {
      const PeakSite& site = sites[i];
      device.top_sites.push_back(ResolvedSite{
          site.bytes, site.count, site.cache ? std::vector<SiteFrame>{} : resolved[site.stack],
          site.allocator, site.cache, site.graph});
      if (trace.roles_recorded && device.roles_at_peak)
        device.top_sites.back().roles = roles_of(site, *device.roles_at_peak, owners);
    }
    merge_alike(device.top_sites);
    if (device.top_sites.size() > top) device.top_sites.resize(top);
  }
  return warnings;
}

}  // namespace gmt::analyzer
