// SPDX-License-Identifier: Apache-2.0
// The rules below are PyTorch's c10/cuda/CUDACachingAllocator.cpp (DeviceCachingAllocator's
// functions, named beside the code that follows them) and c10/core/AllocatorConfig.*, read from
// the main branch of the 2.10-2.11 time (AcceleratorAllocatorConfig, max_non_split_rounding_mb;
// the exact v2.11 tag could not be pinned); large_segment_size_mb may be newer than a recorded
// version, its default is the older constant. Indices stand for PyTorch's Block pointers: a
// Block reference is never held across new_block(), which may move them.
#include "analyzer/model/allocator/caching_allocator_model.h"

#include <algorithm>
#include <iterator>
#include <limits>

namespace gmt::analyzer::allocator {
namespace {

// Where synthetic segment addresses start, and their alignment (CUDA's for large allocations).
constexpr uint64_t kFirstAddress = 0x7f0000000000;
constexpr uint64_t kAddressAlignment = 2ull << 20;
// The address space of an expandable segment when the device's size is not known.
constexpr uint64_t kUnknownDeviceTotal = 1ull << 40;

uint64_t saturating_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

}  // namespace

CachingAllocatorModel::CachingAllocatorModel(ModelOptions options)
    : settings_(options.settings),
      capacity_(options.capacity),
      device_total_(options.device_total),
      segment_address_(std::move(options.segment_address)),
      keep_events_(options.keep_events),
      next_address_(kFirstAddress) {
  pools_.resize(2);
  pools_[kSmallPool].small = true;
}

void CachingAllocatorModel::set_settings(const AllocatorSettings& settings) {
  settings_ = settings;
}

void CachingAllocatorModel::reset_peaks() {
  stats_.max_allocated_bytes = stats_.allocated_bytes;
  stats_.max_reserved_bytes = stats_.reserved_bytes;
}

// ---- blocks and their sets ------------------------------------------------------------------

CachingAllocatorModel::SizeKey CachingAllocatorModel::size_key(uint32_t b) const {
  const Block& k = blocks_[b];
  return {k.stream, k.size, k.address, b};
}

CachingAllocatorModel::AddressKey CachingAllocatorModel::address_key(uint32_t b) const {
  const Block& k = blocks_[b];
  return {k.stream, k.address, b};
}

uint32_t CachingAllocatorModel::new_block(uint64_t address, uint64_t size, uint64_t stream,
                                          uint32_t pool) {
  Block b;
  b.address = address;
  b.size = size;
  b.stream = stream;
  b.pool = pool;
  if (!free_slots_.empty()) {
    const uint32_t i = free_slots_.back();
    free_slots_.pop_back();
    blocks_[i] = b;
    return i;
  }
  blocks_.push_back(b);
  return static_cast<uint32_t>(blocks_.size() - 1);
}

void CachingAllocatorModel::delete_block(uint32_t b) {
  blocks_[b].live = false;
  free_slots_.push_back(b);
}

// BlockPool::insert_into_blocks: a block cached now starts its garbage-collection age at the
// pool's count of get_free_block calls.
void CachingAllocatorModel::insert_into_blocks(BlockPool& pool, uint32_t b) {
  blocks_[b].gc_count_base = pool.get_free_blocks_call_count;
  pool.blocks.insert(size_key(b));
}

CachingAllocatorModel::PrivatePool* CachingAllocatorModel::owner_of(uint32_t pool) {
  const uint64_t owner = pools_[pool].owner;
  if (owner == 0) return nullptr;
  const auto it = private_pools_.find(owner);
  return it == private_pools_.end() ? nullptr : &it->second;
}

void CachingAllocatorModel::record(SegmentAction action, SegmentCause cause, uint32_t pool,
                                   uint64_t address, uint64_t size, uint64_t stream,
                                   bool expandable) {
  if (!keep_events_) return;
  SegmentEvent e;
  e.action = action;
  e.cause = cause;
  e.small = pools_[pool].small;
  e.expandable = expandable;
  e.address = address;
  e.size = size;
  e.stream = stream;
  e.pool = pools_[pool].owner;
  e.request = stats_.requests;
  events_.push_back(e);
}

void CachingAllocatorModel::add_reserved(uint64_t bytes) {
  stats_.reserved_bytes += bytes;
  stats_.max_reserved_bytes = std::max(stats_.max_reserved_bytes, stats_.reserved_bytes);
}

uint64_t CachingAllocatorModel::next_segment_address(uint64_t size, bool expandable) {
  if (segment_address_) return segment_address_(size, expandable);
  gaps_.note(Gap::kSyntheticAddresses);
  const uint64_t address = next_address_;
  next_address_ += (size + kAddressAlignment - 1) / kAddressAlignment * kAddressAlignment;
  return address;
}

// DeviceCachingAllocator's constructor and setMemoryFraction: a fraction below 1 caps what the
// allocator may hold at that share of the device's total memory.
std::optional<uint64_t> CachingAllocatorModel::allowed_memory_maximum() const {
  if (settings_.per_process_memory_fraction >= 1.0) return std::nullopt;
  const uint64_t total = device_total_ != 0 ? device_total_ : capacity_;
  if (total == UINT64_MAX) return std::nullopt;
  return static_cast<uint64_t>(settings_.per_process_memory_fraction * static_cast<double>(total));
}

// malloc and get_free_block: garbage collection (and the age count it needs) only runs with a
// memory fraction set and a threshold above 0.
bool CachingAllocatorModel::gc_enabled() const {
  return settings_.garbage_collection_threshold > 0.0 && allowed_memory_maximum().has_value();
}

// ---- requests -------------------------------------------------------------------------------

AllocOutcome CachingAllocatorModel::malloc(uint64_t request_id, uint64_t size, uint64_t stream) {
  AllocOutcome out;
  const uint32_t b = allocate(size, stream, out);
  if (!out.ok) return out;
  if (b != kNone) {
    blocks_[b].request_id = request_id;
    out.address = blocks_[b].address;
    out.block_size = blocks_[b].size;
  }
  // A zero-byte request holds no block (CUDACachingAllocator::allocate skips malloc for it);
  // it is still known, so that its free is not taken for one the replay missed.
  const auto [entry, added] = requests_.try_insert(request_id, b);
  if (!added) entry->value = b;  // a request id reused without a free: the last one holds it
  return out;
}

// DeviceCachingAllocator::malloc.
uint32_t CachingAllocatorModel::allocate(uint64_t orig_size, uint64_t stream, AllocOutcome& out) {
  if (orig_size == 0) {
    out.ok = true;
    return kNone;
  }
  ++stats_.requests;
  Params p;
  p.size = round_size(orig_size, settings_.roundup_divisions);
  p.stream = stream;
  p.pool = get_pool(p.size, stream);
  p.alloc_size = allocation_size(p.size, settings_.large_segment_size);
  // malloc: expandable segments apply to every pool but a MemPool's with its own allocator,
  // which the model does not follow (model_gaps.h).
  p.expandable = settings_.expandable_segments;
  out.rounded = p.size;
  out.alloc_size = p.alloc_size;

  // The free-memory callbacks between the two searches free nothing the model knows of
  // (model_gaps.h: kFreeMemoryCallbacks), so one search stands for both.
  bool found = get_free_block(p);
  out.cached = found;
  if (!found) {
    if (gc_enabled()) garbage_collect_cached_blocks();
    // alloc_block; then release_available_cached_blocks and retry; then, outside captures,
    // release_cached_blocks and retry (counted as a retry).
    found = alloc_block(p, false) || (release_available_cached_blocks(p) && alloc_block(p, false));
    if (!found && captures_.empty()) {
      release_cached_blocks(0, SegmentCause::kReleaseAll);
      found = alloc_block(p, true);
    }
  }
  if (!found) {
    ++stats_.num_ooms;
    return kNone;
  }
  const bool split = should_split(blocks_[p.block], p.size, p.expandable);
  const uint32_t b = alloc_found_block(p, split);
  Block& block = blocks_[b];
  block.requested = orig_size;
  stats_.allocated_bytes += block.size;
  stats_.max_allocated_bytes = std::max(stats_.max_allocated_bytes, stats_.allocated_bytes);
  stats_.requested_bytes += orig_size;
  out.ok = true;
  return b;
}

bool CachingAllocatorModel::free(uint64_t request_id) {
  auto* entry = requests_.find(request_id);
  if (entry == nullptr) {
    gaps_.note(Gap::kUnknownFree);
    return false;
  }
  const uint32_t b = entry->value;
  requests_.erase(entry);
  if (b == kNone) return true;  // a zero-byte request
  // DeviceCachingAllocator::free: a block used on no other stream goes straight to
  // free_block.
  Block& block = blocks_[b];
  block.allocated = false;
  if (!block.free_requested) {
    stats_.allocated_bytes -= block.size;
    stats_.requested_bytes -= block.requested;
  }
  block.free_requested = false;
  free_block(b);
  return true;
}

bool CachingAllocatorModel::free_requested(uint64_t request_id) {
  const auto* entry = requests_.find(request_id);
  if (entry == nullptr) {
    gaps_.note(Gap::kUnknownFree);
    return false;
  }
  if (entry->value == kNone) return true;
  // DeviceCachingAllocator::free: the allocated stats drop before the stream uses are looked
  // at; the block waits in insert_events until its events complete.
  Block& block = blocks_[entry->value];
  if (!block.free_requested) {
    block.free_requested = true;
    stats_.allocated_bytes -= block.size;
    stats_.requested_bytes -= block.requested;
  }
  return true;
}

void CachingAllocatorModel::record_stream(uint64_t request_id, uint64_t stream) {
  // DeviceCachingAllocator::recordStream ignores uses on the allocation stream.
  const auto* entry = requests_.find(request_id);
  if (entry == nullptr || entry->value == kNone) return;
  if (blocks_[entry->value].stream != stream) gaps_.note(Gap::kCrossStreamUse);
}

void CachingAllocatorModel::empty_cache(uint64_t pool) {
  // emptyCache: release_cached_blocks for the pool asked for.
  release_cached_blocks(pool, SegmentCause::kEmptyCache);
}

bool CachingAllocatorModel::would_fit(uint64_t size, uint64_t stream) const {
  CachingAllocatorModel trial = *this;
  trial.keep_events_ = false;
  // The caller's address source may follow a recording: the trial must not move it on. Where a
  // trial segment lies does not change whether the request fits.
  trial.segment_address_ = nullptr;
  AllocOutcome out;
  trial.allocate(size, stream, out);
  return out.ok;
}

// ---- pools ----------------------------------------------------------------------------------

// get_pool: while a capture is underway, the latest one whose filter takes the stream serves
// it from its private pool; else the default pools; small for rounded sizes up to 1 MiB.
uint32_t CachingAllocatorModel::get_pool(uint64_t rounded, uint64_t stream) const {
  for (auto it = captures_.rbegin(); it != captures_.rend(); ++it) {
    if (it->stream.has_value() && *it->stream != stream) continue;
    const PrivatePool& pp = private_pools_.at(it->pool);
    return is_small(rounded) ? pp.small : pp.large;
  }
  return is_small(rounded) ? kSmallPool : kLargePool;
}

void CachingAllocatorModel::begin_allocate_to_pool(uint64_t pool, std::optional<uint64_t> stream) {
  gaps_.note(Gap::kCaptureFilter);
  // create_or_incref_pool: a new pool with one use, or one more use of a live one.
  auto it = private_pools_.find(pool);
  if (it == private_pools_.end()) {
    PrivatePool pp;
    pp.large = static_cast<uint32_t>(pools_.size());
    pp.small = pp.large + 1;
    pools_.resize(pools_.size() + 2);
    pools_[pp.large].owner = pool;
    pools_[pp.small].owner = pool;
    pools_[pp.small].small = true;
    private_pools_.emplace(pool, pp);
  } else {
    ++it->second.use_count;
  }
  captures_.push_back({pool, stream});
}

void CachingAllocatorModel::end_allocate_to_pool(uint64_t pool) {
  // endAllocateToPool: the pool stops serving requests; its blocks stay in it.
  const auto it = std::find_if(captures_.begin(), captures_.end(),
                               [&](const Capture& c) { return c.pool == pool; });
  if (it != captures_.end()) captures_.erase(it);
}

void CachingAllocatorModel::release_pool(uint64_t pool) {
  // releasePool: without uses the pool becomes freeable: release_cached_blocks may return its
  // unsplit blocks to CUDA, and drops the pool once it holds no segment.
  const auto it = private_pools_.find(pool);
  if (it == private_pools_.end() || it->second.use_count == 0) return;
  if (--it->second.use_count == 0) it->second.freeable = true;
}

// ---- finding and splitting ------------------------------------------------------------------

uint64_t CachingAllocatorModel::expandable_size(uint32_t b) const {
  // get_free_block: a free block followed by unmapped address space can grow into it.
  const Block& k = blocks_[b];
  if (k.next != kNone && !blocks_[k.next].mapped) return k.size + blocks_[k.next].size;
  return k.size;
}

// get_free_block: best fit within the pool for the stream, with the rules of expandable
// segments and max_split_size.
bool CachingAllocatorModel::get_free_block(Params& p) {
  BlockPool& pool = pools_[p.pool];
  if (gc_enabled()) ++pool.get_free_blocks_call_count;  // blocks' ages for the collector
  auto it = pool.blocks.lower_bound({p.stream, p.size, 0, 0});
  if (it == pool.blocks.end() || it->stream != p.stream) return false;
  if (blocks_[it->block].expandable != kNone) {
    if (p.expandable) {
      // For best fit an expandable block counts as what it could grow to: move on while the
      // next block could become smaller.
      auto next = std::next(it);
      while (blocks_[it->block].expandable != kNone && next != pool.blocks.end() &&
             next->stream == p.stream &&
             expandable_size(next->block) < expandable_size(it->block)) {
        it = next++;
      }
    } else {
      // Expandable segments turned off since: only the other blocks serve.
      do {
        ++it;
      } while (it != pool.blocks.end() && blocks_[it->block].expandable != kNone &&
               it->stream == p.stream);
      if (it == pool.blocks.end() || it->stream != p.stream) return false;
    }
  }
  const uint64_t max_split = settings_.max_split_size;
  // An oversize block (max_split_size or more) never serves a request below that size...
  if (p.size < max_split && it->size >= max_split) return false;
  // ... and serves a larger one only within max_non_split_rounding_size of it.
  if (p.size >= max_split &&
      it->size >= saturating_add(p.size, settings_.max_non_split_rounding_size))
    return false;
  p.block = it->block;
  pool.blocks.erase(it);
  return true;
}

// should_split: the small pool (and any expandable segment) splits off a rest of 512 bytes or
// more; the large pool a rest above 1 MiB (kSmallSize), for requests below max_split_size.
bool CachingAllocatorModel::should_split(const Block& b, uint64_t size, bool expandable) const {
  const uint64_t remaining = b.size - size;
  if (pools_[b.pool].small || expandable) return remaining >= kMinBlockSize;
  return size < settings_.max_split_size && remaining > kSmallSize;
}

// alloc_found_block: the block handed out is the found one, or its first `size` bytes with the
// rest cached as a block of its own.
uint32_t CachingAllocatorModel::alloc_found_block(const Params& p, bool split) {
  uint32_t b = p.block;
  if (split) {
    const uint32_t remaining = b;
    b = new_block(blocks_[remaining].address, p.size, p.stream, p.pool);
    Block& rest = blocks_[remaining];
    Block& block = blocks_[b];
    block.expandable = rest.expandable;
    block.prev = rest.prev;
    if (block.prev != kNone) blocks_[block.prev].next = b;
    block.next = remaining;
    rest.prev = b;
    rest.address += p.size;
    rest.size -= p.size;
    insert_into_blocks(pools_[p.pool], remaining);
  }
  blocks_[b].allocated = true;
  return b;
}

// ---- freeing into the cache -----------------------------------------------------------------

// free_block: merged with its free neighbours of the same segment, then cached.
void CachingAllocatorModel::free_block(uint32_t b) {
  BlockPool& pool = pools_[blocks_[b].pool];
  const uint32_t prev = blocks_[b].prev;
  const uint32_t next = blocks_[b].next;
  try_merge_blocks(b, prev, pool);
  try_merge_blocks(b, next, pool);
  insert_into_blocks(pool, b);
}

// try_merge_blocks: `src` (a neighbour of `dst`) joins `dst` when free and mapped alike;
// returns its bytes, 0 when it does not.
uint64_t CachingAllocatorModel::try_merge_blocks(uint32_t dst, uint32_t src, BlockPool& pool) {
  if (src == kNone) return 0;
  Block& s = blocks_[src];
  Block& d = blocks_[dst];
  if (s.allocated || s.mapped != d.mapped) return 0;
  if (s.mapped) {
    pool.blocks.erase(size_key(src));
  } else {
    pool.unmapped.erase(address_key(src));
  }
  if (d.prev == src) {  // [src dst]
    d.address = s.address;
    d.prev = s.prev;
    if (d.prev != kNone) blocks_[d.prev].next = dst;
  } else {  // [dst src]
    d.next = s.next;
    if (d.next != kNone) blocks_[d.next].prev = dst;
  }
  const uint64_t subsumed = s.size;
  d.size += subsumed;
  delete_block(src);
  return subsumed;
}

// ---- new memory from CUDA -------------------------------------------------------------------

// alloc_block: a segment of alloc_size from cudaMalloc, or pages mapped into an expandable
// segment; it fails past the memory fraction's cap or the device's capacity.
bool CachingAllocatorModel::alloc_block(Params& p, bool retry) {
  if (retry) ++stats_.num_alloc_retries;
  const uint64_t size = p.alloc_size;
  if (const auto allowed = allowed_memory_maximum();
      allowed.has_value() && saturating_add(stats_.reserved_bytes, size) > *allowed)
    return false;
  if (p.expandable) {
    p.block = try_allocate_expandable_block(p);
    if (p.block == kNone) return false;
    if (PrivatePool* pp = owner_of(p.pool)) ++pp->cuda_malloc_count;
    return true;
  }
  if (saturating_add(stats_.reserved_bytes, size) > capacity_) return false;
  if (PrivatePool* pp = owner_of(p.pool)) ++pp->cuda_malloc_count;
  const uint64_t address = next_segment_address(size, false);
  p.block = new_block(address, size, p.stream, p.pool);
  add_reserved(size);
  ++stats_.segments;
  ++stats_.num_device_alloc;
  record(SegmentAction::kAlloc, SegmentCause::kRequest, p.pool, address, size, p.stream, false);
  return true;
}

// find_expandable_block: the lowest-addressed run of free and unmapped blocks of the stream's
// segments with room for `size` (starting at a free block just before unmapped space, if
// any); else a new segment whose address space is one unmapped block.
uint32_t CachingAllocatorModel::find_expandable_block(const Params& p) {
  BlockPool& pool = pools_[p.pool];
  const auto allocatable = [&](uint32_t b) { return b != kNone && !blocks_[b].allocated; };
  const auto has_room = [&](uint32_t b) {
    uint64_t bytes = 0;
    while (bytes < p.size && allocatable(b)) {
      bytes += blocks_[b].size;
      b = blocks_[b].next;
    }
    return bytes >= p.size;
  };
  for (auto it = pool.unmapped.lower_bound({p.stream, 0, 0});
       it != pool.unmapped.end() && it->stream == p.stream; ++it) {
    uint32_t c = it->block;
    if (allocatable(blocks_[c].prev)) c = blocks_[c].prev;
    if (has_room(c)) return c;
  }
  // ExpandableSegment: pages of 2 MiB for the small pool, of the large segment size for the
  // large one; address space for 1 1/8 of the device's memory.
  ExpandableSegment es;
  es.page = pool.small ? kSmallBuffer : settings_.large_segment_size;
  const uint64_t total = device_total_ != 0        ? device_total_
                         : capacity_ != UINT64_MAX ? capacity_
                                                   : kUnknownDeviceTotal;
  es.pages = (total + total / 8 + es.page - 1) / es.page;
  es.base = next_segment_address(es.page * es.pages, true);
  const auto segment = static_cast<uint32_t>(expandable_.size());
  expandable_.push_back(std::move(es));
  const uint32_t c =
      new_block(expandable_[segment].base, expandable_[segment].page * expandable_[segment].pages,
                p.stream, p.pool);
  blocks_[c].mapped = false;
  blocks_[c].expandable = segment;
  pool.unmapped.insert(address_key(c));
  return c;
}

// try_allocate_expandable_block: map what the found run lacks, merging as pages come, until
// one free block holds `size`; it is taken out of the cache for alloc_found_block.
uint32_t CachingAllocatorModel::try_allocate_expandable_block(const Params& p) {
  uint32_t c = find_expandable_block(p);
  if (!blocks_[c].mapped && !map_block(c, std::min(blocks_[c].size, p.size))) return kNone;
  while (blocks_[c].size < p.size) {
    const uint64_t remaining = p.size - blocks_[c].size;
    const uint32_t next = blocks_[c].next;
    if (!map_block(next, std::min(remaining, blocks_[next].size))) return kNone;
    c = next;
  }
  pools_[p.pool].blocks.erase(size_key(c));
  return c;
}

// ExpandableSegment::map: the whole pages over [address, address + size); every page is new
// physical memory, so all fail together when the device has no room for them.
CachingAllocatorModel::Range CachingAllocatorModel::map_pages(ExpandableSegment& es,
                                                              uint64_t address, uint64_t size) {
  const uint64_t begin = (address - es.base) / es.page;
  const uint64_t end = (address + size - es.base + es.page - 1) / es.page;
  const uint64_t bytes = (end - begin) * es.page;
  if (begin == end || saturating_add(stats_.reserved_bytes, bytes) > capacity_)
    return {es.base + begin * es.page, 0};
  if (es.mapped.size() < end) es.mapped.resize(end, false);
  std::fill(es.mapped.begin() + static_cast<std::ptrdiff_t>(begin),
            es.mapped.begin() + static_cast<std::ptrdiff_t>(end), true);
  return {es.base + begin * es.page, bytes};
}

// ExpandableSegment::unmap: only the pages wholly inside [address, address + size).
CachingAllocatorModel::Range CachingAllocatorModel::unmap_pages(ExpandableSegment& es,
                                                                uint64_t address, uint64_t size) {
  const uint64_t begin = (address - es.base + es.page - 1) / es.page;
  const uint64_t end = (address + size - es.base) / es.page;
  if (begin >= end) return {address, 0};
  std::fill(es.mapped.begin() + static_cast<std::ptrdiff_t>(begin),
            es.mapped.begin() + static_cast<std::ptrdiff_t>(end), false);
  while (!es.mapped.empty() && !es.mapped.back()) es.mapped.pop_back();  // trimHandles
  return {es.base + begin * es.page, (end - begin) * es.page};
}

// map_block: pages for the start of an unmapped block; the rest stays unmapped; the mapped
// part merges with free neighbours and is cached.
bool CachingAllocatorModel::map_block(uint32_t b, uint64_t size) {
  const uint32_t segment = blocks_[b].expandable;
  const Range mapped = map_pages(expandable_[segment], blocks_[b].address, size);
  if (mapped.size == 0) return false;
  const uint32_t pool_index = blocks_[b].pool;
  pools_[pool_index].unmapped.erase(address_key(b));
  blocks_[b].mapped = true;
  if (mapped.size < blocks_[b].size) {
    const uint32_t rest = new_block(blocks_[b].address + mapped.size, blocks_[b].size - mapped.size,
                                    blocks_[b].stream, pool_index);
    Block& r = blocks_[rest];
    r.mapped = false;
    r.expandable = segment;
    r.prev = b;
    r.next = blocks_[b].next;
    if (r.next != kNone) blocks_[r.next].prev = rest;
    blocks_[b].next = rest;
    blocks_[b].size = mapped.size;
    pools_[pool_index].unmapped.insert(address_key(rest));
  }
  BlockPool& pool = pools_[pool_index];
  try_merge_blocks(b, blocks_[b].prev, pool);
  try_merge_blocks(b, blocks_[b].next, pool);
  insert_into_blocks(pool, b);
  add_reserved(mapped.size);
  ++stats_.num_device_alloc;
  record(SegmentAction::kMap, SegmentCause::kRequest, pool_index, mapped.address, mapped.size,
         blocks_[b].stream, true);
  return true;
}

// unmap_block: the whole pages of a free block go back to CUDA; what is left of it on either
// side stays cached; the unmapped part merges with unmapped neighbours.
void CachingAllocatorModel::unmap_block(uint32_t b, SegmentCause cause) {
  const uint32_t segment = blocks_[b].expandable;
  const Range unmapped = unmap_pages(expandable_[segment], blocks_[b].address, blocks_[b].size);
  if (unmapped.size == 0) return;
  const uint32_t pool_index = blocks_[b].pool;
  pools_[pool_index].blocks.erase(size_key(b));
  const uint64_t before = unmapped.address - blocks_[b].address;
  if (before > 0) {
    const uint32_t f = new_block(blocks_[b].address, before, blocks_[b].stream, pool_index);
    blocks_[f].expandable = segment;
    blocks_[f].prev = blocks_[b].prev;
    blocks_[f].next = b;
    if (blocks_[f].prev != kNone) blocks_[blocks_[f].prev].next = f;
    blocks_[b].prev = f;
    insert_into_blocks(pools_[pool_index], f);
  }
  const uint64_t after = blocks_[b].size - (before + unmapped.size);
  if (after > 0) {
    const uint32_t f =
        new_block(unmapped.address + unmapped.size, after, blocks_[b].stream, pool_index);
    blocks_[f].expandable = segment;
    blocks_[f].prev = b;
    blocks_[f].next = blocks_[b].next;
    if (blocks_[f].next != kNone) blocks_[blocks_[f].next].prev = f;
    blocks_[b].next = f;
    insert_into_blocks(pools_[pool_index], f);
  }
  blocks_[b].address = unmapped.address;
  blocks_[b].size = unmapped.size;
  blocks_[b].mapped = false;
  BlockPool& pool = pools_[pool_index];
  try_merge_blocks(b, blocks_[b].prev, pool);
  try_merge_blocks(b, blocks_[b].next, pool);
  pool.unmapped.insert(address_key(b));
  stats_.reserved_bytes -= unmapped.size;
  if (PrivatePool* pp = owner_of(pool_index); pp != nullptr && pp->cuda_malloc_count > 0)
    --pp->cuda_malloc_count;
  ++stats_.num_device_free;
  record(SegmentAction::kUnmap, cause, pool_index, unmapped.address, unmapped.size,
         blocks_[b].stream, true);
}

// ---- giving memory back ---------------------------------------------------------------------

// release_block: a whole cached segment back to CUDA (cudaFree).
void CachingAllocatorModel::release_block(uint32_t b, SegmentCause cause) {
  const Block& k = blocks_[b];
  record(SegmentAction::kFree, cause, k.pool, k.address, k.size, k.stream, false);
  stats_.reserved_bytes -= k.size;
  --stats_.segments;
  ++stats_.num_device_free;
  if (PrivatePool* pp = owner_of(k.pool); pp != nullptr && pp->cuda_malloc_count > 0)
    --pp->cuda_malloc_count;
  pools_[k.pool].blocks.erase(size_key(b));
  delete_block(b);
}

// release_expandable_segment: an expandable segment with nothing mapped goes entirely.
void CachingAllocatorModel::release_expandable_segment(uint32_t b) {
  expandable_[blocks_[b].expandable].live = false;
  expandable_[blocks_[b].expandable].mapped.clear();
  pools_[blocks_[b].pool].unmapped.erase(address_key(b));
  delete_block(b);
}

// release_blocks: every cached block that is a whole segment goes back to CUDA, and every whole
// free page of expandable segments is unmapped (a segment left with nothing mapped goes too);
// in the pool's order (stream, size, address).
void CachingAllocatorModel::release_blocks(uint32_t pool_index, SegmentCause cause) {
  std::vector<uint32_t> to_unmap;
  BlockPool& pool = pools_[pool_index];
  for (auto it = pool.blocks.begin(); it != pool.blocks.end();) {
    const uint32_t b = it->block;
    ++it;
    if (blocks_[b].expandable != kNone) {
      to_unmap.push_back(b);
    } else if (blocks_[b].prev == kNone && blocks_[b].next == kNone) {
      release_block(b, cause);
    }
  }
  for (const uint32_t b : to_unmap) {
    unmap_block(b, cause);
    if (blocks_[b].prev == kNone && blocks_[b].next == kNone) release_expandable_segment(b);
  }
}

// release_available_cached_blocks: after a failed cudaMalloc, with a max_split_size set, the
// smallest cached oversize block of the stream at least as large as the request (or as
// max_split_size) goes back; failing one, the largest ones, until as many bytes went.
bool CachingAllocatorModel::release_available_cached_blocks(const Params& p) {
  const uint64_t max_split = settings_.max_split_size;
  if (max_split == UINT64_MAX) return false;
  BlockPool& pool = pools_[p.pool];
  const uint64_t target = std::max(p.size, max_split);
  auto it = pool.blocks.lower_bound({p.stream, target, 0, 0});
  if (it == pool.blocks.end() || it->stream != p.stream || blocks_[it->block].expandable != kNone) {
    if (it == pool.blocks.begin()) return false;
    uint64_t released = 0;
    --it;  // the largest block below the target (PyTorch checks its stream in the loop)
    while (released < target && it->size >= max_split && it->stream == p.stream) {
      const auto cur = it;
      const bool first = cur == pool.blocks.begin();
      if (!first) --it;
      const uint32_t b = cur->block;
      if (blocks_[b].expandable == kNone) {
        released += blocks_[b].size;
        release_block(b, SegmentCause::kReleaseOversize);
      }
      if (first) break;
    }
    return released >= target;
  }
  release_block(it->block, SegmentCause::kReleaseOversize);
  return true;
}

// release_cached_blocks: for the default pool (and no capture underway), the default pools'
// cache; then every freeable private pool's (only the one asked for, given a pool id), which
// goes once it holds no segment.
void CachingAllocatorModel::release_cached_blocks(uint64_t pool, SegmentCause cause) {
  if (pool == 0 && captures_.empty()) {
    release_blocks(kLargePool, cause);
    release_blocks(kSmallPool, cause);
  }
  for (auto it = private_pools_.begin(); it != private_pools_.end();) {
    if (!it->second.freeable || (pool != 0 && it->first != pool)) {
      ++it;
      continue;
    }
    gaps_.note(Gap::kFreeablePoolOrder);
    release_blocks(it->second.small, cause);
    release_blocks(it->second.large, cause);
    it = it->second.cuda_malloc_count == 0 ? private_pools_.erase(it) : std::next(it);
  }
}

// garbage_collect_cached_blocks: past threshold x allowed memory, the default large pool's
// unsplit cached blocks at least as old (in get_free_block calls) as their average go back
// to CUDA, rounds of them, until the excess is reclaimed or none goes.
void CachingAllocatorModel::garbage_collect_cached_blocks() {
  const auto allowed = allowed_memory_maximum();
  const auto threshold =
      static_cast<uint64_t>(settings_.garbage_collection_threshold * static_cast<double>(*allowed));
  if (stats_.reserved_bytes <= threshold) return;
  const uint64_t target = stats_.reserved_bytes - threshold;
  BlockPool& pool = pools_[kLargePool];
  const auto age = [&](uint32_t b) {
    return static_cast<uint64_t>(
        static_cast<int>(pool.get_free_blocks_call_count - blocks_[b].gc_count_base));
  };
  const auto split = [&](uint32_t b) {
    return blocks_[b].prev != kNone || blocks_[b].next != kNone;
  };
  uint64_t total_age = 0;
  int freeable = 0;
  for (const SizeKey& k : pool.blocks) {
    if (!split(k.block)) {
      total_age += age(k.block);
      ++freeable;
    }
  }
  if (freeable == 0) return;
  uint64_t reclaimed = 0;
  bool freed = true;
  while (reclaimed < target && freed && freeable > 0) {
    const double age_threshold = static_cast<double>(total_age) / freeable;
    freed = false;
    for (auto it = pool.blocks.begin(); it != pool.blocks.end();) {
      const uint32_t b = it->block;
      ++it;
      if (!split(b) && blocks_[b].expandable == kNone &&
          static_cast<double>(age(b)) >= age_threshold) {
        freed = true;
        reclaimed += blocks_[b].size;
        total_age -= age(b);
        --freeable;
        release_block(b, SegmentCause::kGarbageCollection);
      }
    }
  }
}

// ---- views ----------------------------------------------------------------------------------

// snapshot: one segment per cudaMalloc, one per run of mapped pages of an expandable segment.
std::vector<SegmentView> CachingAllocatorModel::segments() const {
  std::vector<SegmentView> out;
  for (uint32_t head = 0; head < blocks_.size(); ++head) {
    const Block& h = blocks_[head];
    if (!h.live || !h.mapped || (h.prev != kNone && blocks_[h.prev].mapped)) continue;
    SegmentView s;
    s.address = h.address;
    s.stream = h.stream;
    s.small = pools_[h.pool].small;
    s.expandable = h.expandable != kNone;
    s.pool = pools_[h.pool].owner;
    for (uint32_t b = head; b != kNone && blocks_[b].mapped; b = blocks_[b].next) {
      const Block& k = blocks_[b];
      BlockView v;
      v.address = k.address;
      v.size = k.size;
      v.allocated = k.allocated;
      if (k.allocated) {
        v.requested = k.requested;
        v.request_id = k.request_id;
        s.allocated_bytes += k.size;
      }
      s.size += k.size;
      s.blocks.push_back(v);
    }
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(),
            [](const SegmentView& a, const SegmentView& b) { return a.address < b.address; });
  return out;
}

// ---- the state, for a replay that skips repeated steps ---------------------------------------

void CachingAllocatorModel::append_state(std::vector<uint64_t>& out) const {
  // Block slots and the order blocks were made in decide nothing: a segment is its blocks in
  // address order, and segments are taken in address order.
  std::vector<uint32_t> heads;
  for (uint32_t b = 0; b < blocks_.size(); ++b) {
    if (blocks_[b].live && blocks_[b].prev == kNone) heads.push_back(b);
  }
  std::sort(heads.begin(), heads.end(),
            [&](uint32_t a, uint32_t b) { return blocks_[a].address < blocks_[b].address; });
  out.push_back(heads.size());
  for (const uint32_t head : heads) {
    for (uint32_t b = head; b != kNone; b = blocks_[b].next) {
      const Block& k = blocks_[b];
      const BlockPool& pool = pools_[k.pool];
      out.insert(out.end(),
                 {k.address, k.size, k.stream, k.requested, k.request_id,
                  static_cast<uint64_t>(k.pool), static_cast<uint64_t>(k.expandable),
                  static_cast<uint64_t>(k.allocated) | k.free_requested << 1 | k.mapped << 2,
                  // Its age for the collector, which compares only ages.
                  static_cast<uint64_t>(pool.get_free_blocks_call_count - k.gc_count_base)});
    }
    out.push_back(UINT64_MAX);
  }
  out.push_back(pools_.size());
  for (const BlockPool& pool : pools_) out.push_back(pool.owner);
  out.push_back(private_pools_.size());
  for (const auto& [id, p] : private_pools_) {
    out.insert(out.end(),
               {id, static_cast<uint64_t>(p.use_count), static_cast<uint64_t>(p.cuda_malloc_count),
                p.large, p.small, static_cast<uint64_t>(p.freeable)});
  }
  out.push_back(captures_.size());
  for (const Capture& c : captures_) out.insert(out.end(), {c.pool, c.stream.value_or(UINT64_MAX)});
  out.push_back(expandable_.size());
  for (const ExpandableSegment& e : expandable_) {
    out.insert(out.end(), {e.base, e.page, e.pages, static_cast<uint64_t>(e.live)});
    for (const bool m : e.mapped) out.push_back(m);
  }
  out.insert(out.end(), {stats_.allocated_bytes, stats_.reserved_bytes, stats_.requested_bytes,
                         stats_.segments, next_address_, capacity_});
}

void CachingAllocatorModel::append_summary(std::vector<uint64_t>& out) const {
  out.insert(out.end(), {stats_.allocated_bytes, stats_.reserved_bytes, stats_.requested_bytes,
                         stats_.segments, blocks_.size() - free_slots_.size(), pools_.size()});
  for (const BlockPool& pool : pools_)
    out.insert(out.end(), {pool.blocks.size(), pool.unmapped.size()});
}

void CachingAllocatorModel::visit_counters(const std::function<void(uint64_t&)>& visit) {
  visit(stats_.num_alloc_retries);
  visit(stats_.num_ooms);
  visit(stats_.num_device_alloc);
  visit(stats_.num_device_free);
  visit(stats_.requests);
  for (std::size_t g = 0; g < kGapCount; ++g) visit(gaps_.count(static_cast<Gap>(g)));
}

}  // namespace gmt::analyzer::allocator
