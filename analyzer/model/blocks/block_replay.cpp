// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/blocks/block_replay.h"

#include <algorithm>
#include <iterator>

namespace gmt::analyzer {

using format::BlockAction;

BlockReplay::Pool& BlockReplay::pool(uint32_t allocator, int device) {
  if (last_pool_ != nullptr && last_pool_->usage.allocator == allocator &&
      last_pool_->usage.device == device)
    return *last_pool_;
  Pool& p = pools_[{allocator, device}];
  last_pool_ = &p;
  p.usage.allocator = allocator;
  p.usage.device = device;
  if (BlockExtents::rebuilt(allocator) && p.extents == nullptr)
    p.extents = &extents_.at(allocator, device);
  return p;
}

void BlockReplay::on(const format::AllocatorSettingsRecord& r) {
  extents_.set(r);
}

uint32_t BlockReplay::site(uint32_t allocator, int device, uint32_t stack) {
  const uint64_t key = block_site_key(allocator, device, stack);
  const auto [entry, added] = site_indices_.try_insert(key, static_cast<uint32_t>(sites_.size()));
  if (added) {
    BlockSiteStats s;
    s.allocator = allocator;
    s.device = device;
    s.stack = stack;
    sites_.push_back(std::move(s));
  }
  return entry->value;
}

void BlockReplay::end_block(Pool& p, uint64_t address) {
  auto* const entry = p.blocks.find(address);
  if (entry == nullptr) return;
  const Block& b = entry->value;
  BlockSiteStats& s = sites_[b.site];
  s.live_bytes -= b.size;
  --s.live_count;
  p.usage.allocated_bytes -= b.size;
  --p.usage.live_blocks;
  p.blocks.erase(entry);
}

void BlockReplay::resize_block(Pool& p, uint64_t address, uint64_t size) {
  auto* const entry = p.blocks.find(address);
  if (entry == nullptr) return;  // freed, its streams pending: not counted
  Block& b = entry->value;
  BlockSiteStats& s = sites_[b.site];
  s.live_bytes = s.live_bytes - b.size + size;
  p.usage.allocated_bytes = p.usage.allocated_bytes - b.size + size;
  b.size = size;
}

// The block's size as its allocator counts it.
uint64_t BlockReplay::block_size(Pool& p, const format::BlockRecord& r) {
  if (!p.extents) return r.size;
  return p.extents->allocate(
      r.address, r.size, [&](uint64_t address, uint64_t size) { resize_block(p, address, size); });
}

void BlockReplay::on(const format::BlockRecord& r, bool captured) {
  Pool& p = pool(r.allocator, r.device);
  ++p.usage.block_events;
  if (p.extents) p.extents->follow(r);
  AllocatorUsage& u = p.usage;
  switch (static_cast<BlockAction>(r.action)) {
    case BlockAction::kAlloc: {
      end_block(p, r.address);  // the same block twice: its free was not reported
      const uint64_t size = block_size(p, r);
      const uint32_t index = site(r.allocator, r.device, r.stack);
      p.blocks.insert(r.address, Block{size, index, captured});
      BlockSiteStats& s = sites_[index];
      s.live_bytes += size;
      ++s.live_count;
      ++s.allocations;
      u.allocated_bytes += size;
      ++u.live_blocks;
      u.peak_allocated_bytes = std::max(u.peak_allocated_bytes, u.allocated_bytes);
      break;
    }
    // The user's free ends the block (the allocator's allocated bytes drop then); a shim that
    // reports only the completion ends it there.
    case BlockAction::kFreeRequested:
    case BlockAction::kFreeCompleted:
      end_block(p, r.address);
      break;
    case BlockAction::kSegmentAlloc: {
      auto [it, added] = p.segments.try_emplace(r.address, r.size);
      if (!added) {
        u.reserved_bytes -= std::min(u.reserved_bytes, it->second);
        it->second = r.size;
      }
      u.reserved_bytes += r.size;
      u.peak_reserved_bytes = std::max(u.peak_reserved_bytes, u.reserved_bytes);
      break;
    }
    case BlockAction::kSegmentFree: {
      p.graph_segments.erase(r.address);
      const auto it = p.segments.find(r.address);
      const uint64_t size = it != p.segments.end() ? it->second : r.size;
      if (it != p.segments.end()) p.segments.erase(it);
      u.reserved_bytes -= std::min(u.reserved_bytes, size);
      break;
    }
    // Expandable segments: pages mapped into and out of one reservation.
    case BlockAction::kSegmentMap:
      u.reserved_bytes += r.size;
      u.peak_reserved_bytes = std::max(u.peak_reserved_bytes, u.reserved_bytes);
      break;
    case BlockAction::kSegmentUnmap:
      u.reserved_bytes -= std::min(u.reserved_bytes, r.size);
      break;
    case BlockAction::kOom:
      ++u.ooms;
      break;
  }
  // An expandable segment's mapped pages hold its cache as a segment's would: each run of them
  // counts as one. Only segment events change the count (blocks come and go far more often).
  if (r.action >= static_cast<uint32_t>(BlockAction::kSegmentAlloc) &&
      r.action <= static_cast<uint32_t>(BlockAction::kSegmentUnmap)) {
    u.live_segments = p.segments.size() + (p.extents ? p.extents->mapped_runs() : 0);
  }
}

void BlockReplay::graph_segment(uint32_t allocator, int device, uint64_t address) {
  Pool& p = pool(allocator, device);
  if (const auto it = p.segments.find(address); it != p.segments.end()) {
    p.graph_segments[address] = it->second;
    return;
  }
  // Captures make few blocks: a walk over the segments is enough.
  for (const auto& [start, size] : p.segments) {
    if (address >= start && address < start + size) {
      p.graph_segments[start] = size;
      return;
    }
  }
}

bool BlockReplay::has_blocks(int device) const {
  for (const auto& [key, p] : pools_) {
    if (key.second == device) return true;
  }
  return false;
}

std::size_t BlockReplay::live_blocks(int device) const {
  std::size_t blocks = 0;
  for (const auto& [key, p] : pools_) {
    if (key.second == device) blocks += p.blocks.size();
  }
  return blocks;
}

uint64_t BlockReplay::allocated_bytes(int device) const {
  uint64_t bytes = 0;
  for (const auto& [key, p] : pools_) {
    if (key.second == device) bytes += p.usage.allocated_bytes;
  }
  return bytes;
}

uint64_t BlockReplay::reserved_bytes(int device) const {
  uint64_t bytes = 0;
  for (const auto& [key, p] : pools_) {
    if (key.second == device) bytes += p.usage.reserved_bytes;
  }
  return bytes;
}

void BlockReplay::take_sample(std::size_t samples) {
  for (BlockSiteStats& s : sites_) {
    s.live_samples.resize(samples, 0);  // a site born later was empty before
    s.live_samples.push_back(s.live_bytes);
    s.live_count_samples.resize(samples, 0);
    s.live_count_samples.push_back(s.live_count);
  }
}

std::vector<PeakSite> BlockReplay::rows_on(int device, std::vector<PeakSite> rows,
                                           const SegmentLookup& segment) const {
  bool replaced = false;
  for (const auto& [key, p] : pools_) {
    if (key.second != device || p.segments.empty()) continue;
    // The driver rows the segments take away from, by stack.
    std::map<uint32_t, PeakSite> segment_rows;
    uint64_t segment_bytes = 0;
    bool found = true;
    for (const auto& [address, size] : p.segments) {
      const auto driver = segment(address);
      if (!driver) {
        found = false;
        break;
      }
      PeakSite& row = segment_rows[driver->first];
      row.bytes += driver->second;
      ++row.count;
      segment_bytes += driver->second;
    }
    if (!found || p.usage.allocated_bytes > segment_bytes) continue;
    const auto driver_row = [&rows](uint32_t stack) -> PeakSite* {
      for (PeakSite& row : rows) {
        if (row.allocator < 0 && row.stack == stack) return &row;
      }
      return nullptr;
    };
    bool held = true;
    for (const auto& [stack, taken] : segment_rows) {
      const PeakSite* row = driver_row(stack);
      held = held && row != nullptr && row->bytes >= taken.bytes && row->count >= taken.count;
    }
    if (!held) continue;
    for (const auto& [stack, taken] : segment_rows) {
      PeakSite* row = driver_row(stack);
      row->bytes -= taken.bytes;
      row->count -= taken.count;
    }
    std::map<uint32_t, PeakSite> block_rows;  // by stack
    // Each graph segment's live bytes, and whether a block the capture did not make is there.
    std::map<uint64_t, std::pair<uint64_t, bool>> in_graph;
    const auto& graph_segments = p.graph_segments;  // a structured binding clang cannot capture
    p.blocks.for_each([&](uint64_t address, const Block& b) {
      PeakSite& row = block_rows[sites_[b.site].stack];
      row.bytes += b.size;
      ++row.count;
      if (graph_segments.empty()) return;
      const auto in = graph_segments.upper_bound(address);
      if (in == graph_segments.begin()) return;
      const auto& [start, size] = *std::prev(in);
      if (address >= start + size) return;
      auto& [bytes, shared] = in_graph[start];
      bytes += b.size;
      shared = shared || !b.captured;
    });
    const int allocator = static_cast<int>(key.first);
    for (const auto& [stack, row] : block_rows) {
      rows.push_back(PeakSite{stack, row.bytes, row.count, allocator, false});
    }
    uint64_t graph_free = 0;
    uint64_t graph_count = 0;
    for (const auto& [address, size] : p.graph_segments) {
      const auto live = in_graph.find(address);
      if (live != in_graph.end() && live->second.second) continue;  // shared
      graph_free += size - std::min(size, live != in_graph.end() ? live->second.first : 0);
      ++graph_count;
    }
    const uint64_t cache = segment_bytes - p.usage.allocated_bytes;
    graph_free = std::min(cache, graph_free);
    rows.push_back(
        PeakSite{0, cache - graph_free, p.segments.size() - graph_count, allocator, true});
    if (graph_count > 0)
      rows.push_back(PeakSite{0, graph_free, graph_count, allocator, true, true});
    replaced = true;
  }
  if (!replaced) return {};
  std::erase_if(rows, [](const PeakSite& row) { return row.allocator < 0 && row.bytes == 0; });
  std::sort(rows.begin(), rows.end(), [](const PeakSite& a, const PeakSite& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.cache != b.cache) return b.cache;  // the cache after blocks of its size
    if (a.allocator != b.allocator) return a.allocator < b.allocator;
    return a.stack < b.stack;
  });
  return rows;
}

std::pair<uint64_t, uint64_t> BlockReplay::free_space(uint32_t allocator, int device) const {
  const auto it = pools_.find({allocator, device});
  if (it == pools_.end()) return {0, 0};
  const Pool& p = it->second;
  std::vector<std::pair<uint64_t, uint64_t>> segments(p.segments.begin(), p.segments.end());
  std::vector<std::pair<uint64_t, uint64_t>> blocks;
  blocks.reserve(p.blocks.size());
  p.blocks.for_each(
      [&](uint64_t address, const Block& b) { blocks.emplace_back(address, b.size); });
  std::sort(segments.begin(), segments.end());
  std::sort(blocks.begin(), blocks.end());
  uint64_t free_bytes = 0;
  uint64_t largest = 0;
  const auto gap = [&](uint64_t bytes) {
    free_bytes += bytes;
    largest = std::max(largest, bytes);
  };
  auto b = blocks.begin();
  for (const auto& [start, size] : segments) {
    const uint64_t end = start + size;
    while (b != blocks.end() && b->first < start) ++b;  // outside any reported segment
    uint64_t cursor = start;
    for (; b != blocks.end() && b->first < end; ++b) {
      if (b->first > cursor) gap(b->first - cursor);
      cursor = std::max(cursor, std::min(end, b->first + b->second));
    }
    if (end > cursor) gap(end - cursor);
  }
  return {free_bytes, largest};
}

void BlockReplay::finish(TraceSummary& summary) const {
  summary.block_sites.clear();
  for (const BlockSiteStats& s : sites_) {
    summary.block_sites[block_site_key(s.allocator, s.device, s.stack)] = s;
  }
  summary.allocators.clear();
  for (const auto& [key, p] : pools_) summary.allocators.push_back(p.usage);
}

}  // namespace gmt::analyzer
