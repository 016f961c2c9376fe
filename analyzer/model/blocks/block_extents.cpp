// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/blocks/block_extents.h"

#include <algorithm>
#include <iterator>
#include <type_traits>

#include "analyzer/model/allocator/request_size.h"

namespace gmt::analyzer {
namespace {

// PyTorch's request rounding is the allocator model's (allocator/request_size.h): one reading
// of its rules.
using allocator::kMinBlockSize;
using allocator::kSmallSize;
static_assert(
    std::is_same_v<allocator::RoundupDivisions, decltype(BlockExtents::Settings{}.divisions)>);

// The range of `ranges` (by address: size) holding `address`, or ranges.end().
std::map<uint64_t, uint64_t>::const_iterator holding(const std::map<uint64_t, uint64_t>& ranges,
                                                     uint64_t address) {
  auto it = ranges.upper_bound(address);
  if (it == ranges.begin()) return ranges.end();
  --it;
  return address < it->first + it->second ? it : ranges.end();
}

}  // namespace

BlockExtents::Settings BlockExtents::Settings::of(const format::AllocatorSettingsRecord& r) {
  Settings s;
  s.max_split_size = r.max_split_size;
  const std::size_t n = std::min(r.roundup_divisions.size(), s.divisions.size());
  std::copy_n(r.roundup_divisions.begin(), n, s.divisions.begin());
  return s;
}

uint64_t BlockExtents::rounded(uint64_t requested) const {
  return allocator::round_size(requested, settings_.divisions);
}

// A free block of `free_bytes` given out for `u`'s request: all of it, or the request with the
// rest split off.
uint64_t BlockExtents::size_in(uint64_t free_bytes, const Used& u) const {
  // Less room than the request: what the trace told of the blocks around it is not the whole
  // story; the request is the best figure left.
  if (free_bytes <= u.rounded) return u.rounded;
  const uint64_t rest = free_bytes - u.rounded;
  const bool split = u.fine_split ? rest >= kMinBlockSize : !u.never_split && rest > kSmallSize;
  return split ? u.rounded : free_bytes;
}

std::pair<uint64_t, bool> BlockExtents::container_end(uint64_t address) const {
  if (const auto s = holding(segments_, address); s != segments_.end())
    return {s->first + s->second, false};
  if (const auto m = holding(mapped_, address); m != mapped_.end())
    return {m->first + m->second, true};
  return {0, false};
}

uint64_t BlockExtents::allocate(uint64_t address, uint64_t requested, const Resize& resize) {
  Used u;
  u.rounded = rounded(requested);
  const auto [container, expandable] = container_end(address);
  u.fine_split = expandable || u.rounded <= kSmallSize;
  u.never_split = u.rounded >= settings_.max_split_size;
  u.size = u.rounded;
  // One walk of the tree for the block at or after `address`, the next one and the one below
  // (this runs for every block handed out).
  const auto at = used_.lower_bound(address);
  const bool again = at != used_.end() && at->first == address;
  if (container != 0) {
    uint64_t end = container;
    const auto next = again ? std::next(at) : at;
    if (next != used_.end() && next->first < end) end = next->first;
    u.size = size_in(end - address, u);
  }
  // A block below whose extent runs into this one ends where this one starts.
  if (at != used_.begin()) {
    const auto prev = std::prev(at);
    if (prev->first + prev->second.size > address) {
      const uint64_t size = size_in(address - prev->first, prev->second);
      if (size != prev->second.size) {
        prev->second.size = size;
        resize(prev->first, size);
      }
    }
  }
  if (again) {
    at->second = u;  // a block handed out again: its free was not reported
  } else {
    used_.emplace_hint(at, address, u);
  }
  return u.size;
}

void BlockExtents::follow(const format::BlockRecord& r) {
  using format::BlockAction;
  switch (static_cast<BlockAction>(r.action)) {
    case BlockAction::kFreeCompleted:
      return release(r.address);
    case BlockAction::kSegmentAlloc:
      return add_segment(r.address, r.size);
    case BlockAction::kSegmentFree:
      return remove_segment(r.address);
    case BlockAction::kSegmentMap:
      return map(r.address, r.size);
    case BlockAction::kSegmentUnmap:
      return unmap(r.address, r.size);
    default:
      return;
  }
}

void BlockExtents::release(uint64_t address) {
  used_.erase(address);
}

void BlockExtents::add_segment(uint64_t address, uint64_t size) {
  segments_.insert_or_assign(address, size);
}

void BlockExtents::remove_segment(uint64_t address) {
  segments_.erase(address);
}

void BlockExtents::map(uint64_t address, uint64_t size) {
  if (size == 0) return;
  unmap(address, size);  // mapped again: replaces what was there
  uint64_t start = address;
  uint64_t end = address + size;
  auto next = mapped_.lower_bound(address);
  if (next != mapped_.begin()) {
    const auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      mapped_.erase(prev);
    }
  }
  next = mapped_.lower_bound(end);
  if (next != mapped_.end() && next->first == end) {
    end += next->second;
    mapped_.erase(next);
  }
  mapped_.emplace(start, end - start);
}

// Every mapped byte in [address, address + size) goes; a range that straddles an end keeps its
// part outside.
void BlockExtents::unmap(uint64_t address, uint64_t size) {
  const uint64_t end = address + size;
  auto it = mapped_.upper_bound(address);
  if (it != mapped_.begin()) --it;
  while (it != mapped_.end() && it->first < end) {
    const uint64_t start = it->first;
    const uint64_t range_end = start + it->second;
    if (range_end <= address) {
      ++it;
      continue;
    }
    it = mapped_.erase(it);
    if (start < address) mapped_.emplace(start, address - start);
    if (range_end > end) it = std::next(mapped_.emplace(end, range_end - end).first);
  }
}

}  // namespace gmt::analyzer
