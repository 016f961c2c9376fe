// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/live/live_device.h"

#include <algorithm>
#include <map>

#include "format/memory_kind.h"

namespace gmt::analyzer {

namespace {

constexpr uint64_t kGrowthWindowNs = 60'000'000'000;

}  // namespace

std::string live_state(const LiveTrace& trace, bool process_gone) {
  if (!trace.described()) return "starting";
  if (trace.saw_end()) return "exited";
  if (!trace.stop_reason().empty()) return "stopped";
  if (process_gone) return "cut";
  return "running";
}

std::vector<LiveSite> live_sites(const TraceSummary& s, int ordinal) {
  std::vector<LiveSite> rows;
  for (const auto& [key, site] : s.sites) {
    if (site.device != ordinal || site.live_resident_bytes == 0) continue;
    const uint64_t segments = std::min(site.live_resident_bytes, site.framework_segment_bytes);
    const uint64_t count =
        site.live_resident_count - std::min(site.live_resident_count, site.framework_segment_count);
    if (site.live_resident_bytes > segments)
      rows.push_back({site.stack, site.live_resident_bytes - segments, count});
  }
  for (const auto& [key, block] : s.block_sites) {
    if (block.device == ordinal && block.live_bytes > 0)
      rows.push_back(
          {block.stack, block.live_bytes, block.live_count, static_cast<int>(block.allocator)});
  }
  for (const AllocatorUsage& a : s.allocators) {
    if (a.device == ordinal && a.reserved_bytes > a.allocated_bytes)
      rows.push_back({0, a.reserved_bytes - a.allocated_bytes, a.live_segments,
                      static_cast<int>(a.allocator), true});
  }
  std::sort(rows.begin(), rows.end(), [](const LiveSite& a, const LiveSite& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.cache != b.cache) return b.cache;
    return a.stack < b.stack;
  });
  return rows;
}

std::vector<uint32_t> live_stacks(const TraceSummary& s) {
  std::vector<uint32_t> stacks;
  for (const auto& [key, site] : s.sites) {
    if (site.live_resident_bytes > 0) stacks.push_back(site.stack);
  }
  for (const auto& [key, block] : s.block_sites) {
    if (block.live_bytes > 0) stacks.push_back(block.stack);
  }
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  return stacks;
}

LiveDevice live_device(const LiveTrace& trace, OwnerLibraryCache& owners, int ordinal,
                       uint64_t now_ns) {
  const TraceSummary& s = trace.summary();
  const DeviceSummary& d = s.devices.at(ordinal);
  LiveDevice out;
  for (const auto& [kind, usage] : d.by_kind) {
    if (usage.live_bytes > 0)
      out.by_kind.emplace_back(std::string(format::memory_kind_name(kind)), usage.live_bytes);
  }
  std::map<std::string, uint64_t> libraries;
  for (const auto& [key, site] : s.sites) {
    if (site.device != ordinal || site.live_resident_bytes == 0) continue;
    libraries[owners.of(site.stack)] += site.live_resident_bytes;
  }
  out.by_library.assign(libraries.begin(), libraries.end());
  std::stable_sort(out.by_library.begin(), out.by_library.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  const uint64_t then = now_ns > kGrowthWindowNs ? now_ns - kGrowthWindowNs : 0;
  if (const std::optional<uint64_t> before = trace.live_bytes_at(ordinal, then))
    out.growth_1m_bytes = static_cast<int64_t>(d.live_bytes) - static_cast<int64_t>(*before);
  // Never both added: the views take their framework figures from the same blocks.
  for (const AllocatorUsage& a : s.allocators) {
    if (a.device != ordinal) continue;
    out.framework_allocated_bytes = out.framework_allocated_bytes.value_or(0) + a.allocated_bytes;
    out.framework_reserved_bytes = out.framework_reserved_bytes.value_or(0) + a.reserved_bytes;
  }
  if (!out.framework_allocated_bytes && d.views_at_exit) {
    out.framework_allocated_bytes = d.views_at_exit->framework_allocated_bytes;
    out.framework_reserved_bytes = d.views_at_exit->framework_reserved_bytes;
  }
  return out;
}

}  // namespace gmt::analyzer
