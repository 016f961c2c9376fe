// SPDX-License-Identifier: Apache-2.0
#include "interpose/record/live_set.h"

namespace gmt::interpose {

using format::Api;
using format::MemoryKind;

// Addresses, VMM handles, arrays and reservations are separate name spaces (format/README.md):
// the top bits keep them apart (user-space addresses and driver handles stay below 2^56).
uint64_t live_key(MemoryKind kind, uint64_t address) {
  switch (kind) {
    case MemoryKind::kVmmPhysical:
      return address | (1ull << 62);
    case MemoryKind::kArray:
      return address | (2ull << 62);
    case MemoryKind::kVmmReservation:
      return address | (3ull << 62);
    default:
      return address;
  }
}

uint64_t live_key_freed_by(Api api, uint64_t address) {
  switch (api) {
    case Api::kCuMemRelease:
      return address | (1ull << 62);
    case Api::kCuArrayDestroy:
    case Api::kCuMipmappedArrayDestroy:
      return address | (2ull << 62);
    case Api::kCuMemAddressFree:
      return address | (3ull << 62);
    default:
      return address;
  }
}

void LiveSet::apply(const format::AllocRecord& r) {
  table_.put(live_key(r.kind, r.address), r, nullptr);
  if (r.kind == MemoryKind::kVmmPhysical) vmm_.created(r.address);
}

void LiveSet::apply(const format::FreeRecord& r) {
  if (r.api == Api::kCuMemRelease && !vmm_.released(r.address)) return;
  table_.take(live_key_freed_by(r.api, r.address), nullptr);
}

void LiveSet::apply(const format::UnmapRecord& r) {
  vmm_.apply(r, [this](uint64_t handle) {
    table_.take(live_key(MemoryKind::kVmmPhysical, handle), nullptr);
  });
}

void LiveVmm::apply(const format::MapRecord& r) {
  maps_.insert_or_assign(r.address, r);
  if (const auto refs = handles_.find(r.handle); refs != handles_.end()) ++refs->second.mappings;
}

void LiveVmm::apply(const format::RetainHandleRecord& r) {
  if (const auto refs = handles_.find(r.handle); refs != handles_.end()) ++refs->second.references;
}

bool LiveVmm::released(uint64_t handle) {
  const auto refs = handles_.find(handle);
  if (refs == handles_.end()) return true;  // made before recording: nothing keeps it here
  if (refs->second.references > 0) --refs->second.references;
  if (refs->second.references > 0 || refs->second.mappings > 0) return false;
  handles_.erase(refs);
  return true;
}

std::size_t LiveVmm::size() const {
  std::size_t n = maps_.size();
  for (const auto& [handle, refs] : handles_) {
    n += (refs.references > 1 ? refs.references - 1 : 0) + (refs.references == 0 ? 1 : 0);
  }
  return n;
}

void LivePhases::apply(const format::PhaseRecord& r) {
  using format::PhaseAction;
  switch (static_cast<PhaseAction>(r.action)) {
    case PhaseAction::kPush:
      pushed_[{r.tid, r.domain}].push_back(r);
      break;
    case PhaseAction::kPop: {
      const auto stack = pushed_.find({r.tid, r.domain});
      if (stack == pushed_.end()) break;  // opened before recording
      stack->second.pop_back();
      if (stack->second.empty()) pushed_.erase(stack);
      break;
    }
    case PhaseAction::kStart:
      started_.insert_or_assign(r.range, r);
      break;
    case PhaseAction::kEnd:
      started_.erase(r.range);
      break;
    case PhaseAction::kMark:
      break;
  }
}

std::size_t LivePhases::size() const {
  std::size_t n = started_.size();
  for (const auto& [thread, stack] : pushed_) n += stack.size();
  return n;
}

void LiveSet::apply(const format::ContextDestroyedRecord& r) {
  table_.remove_if([&](const format::AllocRecord& a) {
    return a.context == r.id && format::owned_by_context(a.kind);
  });
}

LiveBlocks::Pool& LiveBlocks::pool(uint32_t allocator, int32_t device) {
  for (Pool& p : pools_) {
    if (p.allocator == allocator && p.device == device) return p;
  }
  Pool& p = pools_.emplace_back();
  p.allocator = allocator;
  p.device = device;
  return p;
}

const LiveBlocks::Pool* LiveBlocks::find_pool(uint32_t allocator, int32_t device) const {
  for (const Pool& p : pools_) {
    if (p.allocator == allocator && p.device == device) return &p;
  }
  return nullptr;
}

bool LiveBlocks::holds(const format::BlockRecord& r) const {
  const Pool* p = find_pool(r.allocator, r.device);
  return p != nullptr && p->blocks.find(r.address) != nullptr;
}

// Every mapped range inside [address, address + size) goes; one that straddles an end keeps its
// part outside.
void LiveBlocks::unmap(Pool& p, uint64_t address, uint64_t size) {
  const uint64_t end = address + size;
  auto it = p.maps.upper_bound(address);
  if (it != p.maps.begin()) --it;
  while (it != p.maps.end() && it->first < end) {
    const format::BlockRecord range = it->second;
    const uint64_t range_end = range.address + range.size;
    if (range_end <= address) {
      ++it;
      continue;
    }
    it = p.maps.erase(it);
    if (range.address < address) {
      format::BlockRecord left = range;
      left.size = address - range.address;
      p.maps.emplace(left.address, left);
    }
    if (range_end > end) {
      format::BlockRecord right = range;
      right.address = end;
      right.size = range_end - end;
      it = p.maps.emplace(right.address, right).first;
      ++it;
    }
  }
}

void LiveBlocks::apply(const format::BlockRecord& r) {
  using format::BlockAction;
  Pool& p = pool(r.allocator, r.device);
  switch (static_cast<BlockAction>(r.action)) {
    case BlockAction::kAlloc:
      p.blocks.put(r.address, Block{r, {}, false}, nullptr);
      break;
    case BlockAction::kFreeRequested:
      if (Block* b = p.blocks.find(r.address)) {
        b->request = r;
        b->requested = true;
      }
      break;
    case BlockAction::kFreeCompleted:
      p.blocks.take(r.address, nullptr);
      break;
    case BlockAction::kSegmentAlloc:
      p.segments.put(r.address, r, nullptr);
      break;
    case BlockAction::kSegmentFree:
      p.segments.take(r.address, nullptr);
      break;
    case BlockAction::kSegmentMap:
      unmap(p, r.address, r.size);  // a range mapped again replaces what was there
      if (r.size != 0) p.maps.emplace(r.address, r);
      break;
    case BlockAction::kSegmentUnmap:
      unmap(p, r.address, r.size);
      break;
    case BlockAction::kOom:
      break;
  }
}

void LiveBlocks::collect_blocks(std::vector<BlockRef>& out) const {
  for (const Pool& p : pools_) {
    p.blocks.for_each([&](const Block& b) {
      out.push_back(BlockRef{&b.alloc, b.requested ? &b.request : nullptr});
    });
  }
}

void LiveBlocks::sort_blocks(std::vector<BlockRef>& blocks) {
  std::sort(blocks.begin(), blocks.end(), [](const BlockRef& a, const BlockRef& b) {
    if (a.alloc->allocator != b.alloc->allocator) return a.alloc->allocator < b.alloc->allocator;
    if (a.alloc->device != b.alloc->device) return a.alloc->device < b.alloc->device;
    if (a.alloc->address != b.alloc->address) return a.alloc->address > b.alloc->address;
    return a.alloc->time_ns < b.alloc->time_ns;  // twice live (a free lost): the newer last
  });
}

std::size_t LiveBlocks::size() const {
  std::size_t n = 0;
  for (const Pool& p : pools_) {
    n += p.segments.size() + p.maps.size();
    p.blocks.for_each([&](const Block& b) { n += b.requested ? 2 : 1; });
  }
  return n;
}

}  // namespace gmt::interpose
