// SPDX-License-Identifier: Apache-2.0
// A replay of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp,
// DeviceCachingAllocator) for one device: fed the block requests a trace recorded (each
// allocation's size and stream, each free, empty_cache(), CUDA graph captures' private pools),
// it takes the segments PyTorch would take from CUDA, in the same order and of the same sizes,
// and gives the highest reserved and allocated bytes, the segments with their blocks at any
// point, and whether a request would fail on a device of a given capacity. Changing the
// settings, or the requests, predicts another run.
//
// The rules are PyTorch's, each cited beside its code in caching_allocator_model.cpp by the
// function it comes from; the code is written from them, not copied. What the model does not
// reproduce is in model_gaps.h and reported by gaps().
//
// Everything is held by value and indices, so a model can be copied to try a request or a
// setting on the state at some point (would_fit() does).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "analyzer/model/allocator/allocator_settings.h"
#include "analyzer/model/allocator/model_gaps.h"
#include "analyzer/model/containers/flat_hash_map.h"

namespace gmt::analyzer::allocator {

// What the model did with CUDA's memory.
enum class SegmentAction : uint8_t {
  kAlloc,  // cudaMalloc of a segment
  kFree,   // cudaFree of a whole segment
  kMap,    // expandable segments: pages mapped into a segment
  kUnmap,  // and unmapped
};

// Why.
enum class SegmentCause : uint8_t {
  kRequest,            // a request no cached block served (alloc_block)
  kReleaseOversize,    // a failed cudaMalloc: cached oversize blocks freed to retry
  kReleaseAll,         // that failed too: every unsplit cached block freed to retry
  kEmptyCache,         // torch.cuda.empty_cache()
  kGarbageCollection,  // garbage_collection_threshold passed
};

struct SegmentEvent {
  SegmentAction action = SegmentAction::kAlloc;
  SegmentCause cause = SegmentCause::kRequest;
  bool small = false;       // the small pool's (requests up to 1 MiB)
  bool expandable = false;  // part of an expandable segment
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t stream = 0;
  uint64_t pool = 0;     // a private pool's id (a CUDA graph's); 0: the default pools
  uint64_t request = 0;  // how many requests came before it
};

struct ModelOptions {
  AllocatorSettings settings;
  // The bytes CUDA gives the allocator in all (the device's memory less what others hold): a
  // cudaMalloc or a page mapping that would pass it fails. UINT64_MAX: never.
  uint64_t capacity = UINT64_MAX;
  // The device's total memory (cudaDeviceProp::totalGlobalMem): what the memory fraction is a
  // share of and what sizes an expandable segment's address space; 0: not known (the capacity
  // stands for it where finite).
  uint64_t device_total = 0;
  // Where each new segment (or expandable segment's address space) of `size` bytes starts: the
  // recorded run's addresses when replaying it. Unset: each above the previous one.
  std::function<uint64_t(uint64_t size, bool expandable)> segment_address;
  // Whether to keep the SegmentEvents (events()).
  bool keep_events = true;
};

struct AllocOutcome {
  bool ok = false;
  uint64_t address = 0;     // the block's
  uint64_t block_size = 0;  // its bytes, as PyTorch's allocated bytes count them
  uint64_t rounded = 0;     // the request rounded (round_size)
  // What cudaMalloc is (or would be) asked for: the size in PyTorch's "Tried to allocate".
  uint64_t alloc_size = 0;
  bool cached = false;  // served by a block the cache held, no new memory from CUDA
};

struct ModelStats {
  uint64_t allocated_bytes = 0;  // blocks handed out (torch.cuda.memory_allocated)
  uint64_t max_allocated_bytes = 0;
  uint64_t reserved_bytes = 0;  // segments and mapped pages (torch.cuda.memory_reserved)
  uint64_t max_reserved_bytes = 0;
  uint64_t requested_bytes = 0;  // what was asked for, of the blocks handed out
  uint64_t segments = 0;         // cudaMalloc segments held
  uint64_t num_alloc_retries = 0;
  uint64_t num_ooms = 0;
  uint64_t num_device_alloc = 0;  // cudaMallocs and page mappings
  uint64_t num_device_free = 0;   // cudaFrees and page unmappings
  uint64_t requests = 0;
};

struct BlockView {
  uint64_t address = 0;
  uint64_t size = 0;
  bool allocated = false;
  uint64_t requested = 0;   // allocated: what was asked for
  uint64_t request_id = 0;  // allocated: whose it is
};

// A segment as torch.cuda.memory_snapshot() shows one: an expandable segment as one per run of
// mapped pages.
struct SegmentView {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t stream = 0;
  bool small = false;
  bool expandable = false;
  uint64_t pool = 0;
  uint64_t allocated_bytes = 0;
  std::vector<BlockView> blocks;  // by address, free pieces included
};

class CachingAllocatorModel {
 public:
  explicit CachingAllocatorModel(ModelOptions options = {});

  // A request of `size` bytes on `stream` (PyTorch's malloc), known as `request_id` until
  // freed. A failed one (ok false) is PyTorch's OutOfMemoryError: the cache it released to
  // retry stays released.
  AllocOutcome malloc(uint64_t request_id, uint64_t size, uint64_t stream);
  // The request's block back to the cache, merged with free neighbours. False: not held.
  bool free(uint64_t request_id);
  // The request's free asked for while streams may still use its block (DeviceCachingAllocator::
  // free with stream uses pending: PyTorch's FREE_REQUESTED before FREE_COMPLETED): its bytes
  // leave the allocated ones now, the block is reusable only once free() completes it. False:
  // not held.
  bool free_requested(uint64_t request_id);
  // The request's block used on another stream (record_stream): not modelled, counted.
  void record_stream(uint64_t request_id, uint64_t stream);
  // torch.cuda.empty_cache(): every unsplit cached block back to CUDA; with a pool id, the
  // blocks of that pool once it is freeable.
  void empty_cache(uint64_t pool = 0);

  // CUDA graph capture (CUDAGraph::capture_begin / capture_end / reset; torch.cuda.MemPool):
  // from begin to end, the requests on `stream` (every stream when unset) are served from the
  // private pool `pool` (not 0), created at its first begin; release_pool() drops a use, and
  // a pool without uses is emptied by the next empty_cache() or retry.
  void begin_allocate_to_pool(uint64_t pool, std::optional<uint64_t> stream);
  void end_allocate_to_pool(uint64_t pool);
  void release_pool(uint64_t pool);

  // New settings for the requests from now on (torch.cuda.memory._set_allocator_settings).
  void set_settings(const AllocatorSettings& settings);
  const AllocatorSettings& settings() const { return settings_; }
  void set_capacity(uint64_t capacity) { capacity_ = capacity; }
  uint64_t capacity() const { return capacity_; }

  // Whether a request of `size` bytes on `stream` would succeed now, releasing cache if it
  // must; the model itself is left as it is.
  bool would_fit(uint64_t size, uint64_t stream) const;

  const ModelStats& stats() const { return stats_; }
  // The highest allocated and reserved from now on (torch.cuda.reset_peak_memory_stats).
  void reset_peaks();
  const std::vector<SegmentEvent>& events() const { return events_; }
  void clear_events() { events_.clear(); }
  std::vector<SegmentView> segments() const;
  const Gaps& gaps() const { return gaps_; }

  // The state that decides how later requests are served, appended as words: each segment's
  // blocks by address, the free blocks' ages where garbage collection is on, the private pools,
  // the captures under way, the expandable segments, the figures now, the next synthetic
  // address. Neither counters nor highest figures: two equal states serve the same requests
  // alike and reach the same figures. (A what-if replay skips steps that repeat by it.)
  void append_state(std::vector<uint64_t>& out) const;
  // A few words of it, at once: two states alike have the same summary (the figures now, how
  // many blocks, how many cached in each pool), so only states whose summaries agree need
  // comparing in whole.
  void append_summary(std::vector<uint64_t>& out) const;
  // Each count that only grows (the stats' counts, the gaps met), in a fixed order.
  void visit_counters(const std::function<void(uint64_t&)>& visit);

 private:
  static constexpr uint32_t kNone = UINT32_MAX;

  struct Block {
    uint64_t address = 0;
    uint64_t size = 0;
    uint64_t stream = 0;
    uint64_t requested = 0;
    uint64_t request_id = 0;
    int64_t gc_count_base = 0;  // the pool's get_free_block calls when it was cached
    uint32_t prev = kNone;      // neighbours in its segment
    uint32_t next = kNone;
    uint32_t pool = 0;
    uint32_t expandable = kNone;  // its expandable segment
    bool allocated = false;
    bool free_requested = false;  // allocated, its bytes no longer counted (free_requested())
    bool mapped = true;           // false: address space of an expandable segment without pages
    bool live = true;             // false: a free slot of blocks_
  };
  // The free blocks' order (CUDACachingAllocator.cpp: BlockComparatorSize): by stream, size,
  // address; best fit is the first at or after (stream, size).
  struct SizeKey {
    uint64_t stream;
    uint64_t size;
    uint64_t address;
    uint32_t block;
    bool operator<(const SizeKey& o) const {
      if (stream != o.stream) return stream < o.stream;
      if (size != o.size) return size < o.size;
      return address < o.address;
    }
  };
  // Unmapped address space (BlockComparatorAddress): by stream, address.
  struct AddressKey {
    uint64_t stream;
    uint64_t address;
    uint32_t block;
    bool operator<(const AddressKey& o) const {
      if (stream != o.stream) return stream < o.stream;
      return address < o.address;
    }
  };
  struct BlockPool {
    bool small = false;
    uint64_t owner = 0;  // a private pool's id; 0: default
    std::set<SizeKey> blocks;
    std::set<AddressKey> unmapped;
    int64_t get_free_blocks_call_count = 0;
  };
  struct PrivatePool {
    int use_count = 1;
    int cuda_malloc_count = 0;
    uint32_t large = 0;  // its BlockPools
    uint32_t small = 0;
    bool freeable = false;
  };
  struct ExpandableSegment {
    uint64_t base = 0;
    uint64_t page = 0;
    uint64_t pages = 0;  // of address space
    std::vector<bool> mapped;
    bool live = true;
  };
  struct Capture {
    uint64_t pool;
    std::optional<uint64_t> stream;
  };
  // One request on its way through malloc (AllocParams).
  struct Params {
    uint64_t size = 0;  // rounded
    uint64_t stream = 0;
    uint32_t pool = 0;
    uint64_t alloc_size = 0;
    bool expandable = false;
    uint32_t block = kNone;
  };
  struct Range {
    uint64_t address = 0;
    uint64_t size = 0;
  };

  static constexpr uint32_t kLargePool = 0;
  static constexpr uint32_t kSmallPool = 1;

  // The request's block (kNone: failed), or a zero-byte request's nothing.
  uint32_t allocate(uint64_t size, uint64_t stream, AllocOutcome& out);
  uint32_t get_pool(uint64_t rounded, uint64_t stream) const;
  bool get_free_block(Params& p);
  bool alloc_block(Params& p, bool retry);
  bool should_split(const Block& b, uint64_t size, bool expandable) const;
  uint32_t alloc_found_block(const Params& p, bool split);
  void free_block(uint32_t b);
  uint64_t try_merge_blocks(uint32_t dst, uint32_t src, BlockPool& pool);
  uint32_t try_allocate_expandable_block(const Params& p);
  uint32_t find_expandable_block(const Params& p);
  bool map_block(uint32_t b, uint64_t size);
  void unmap_block(uint32_t b, SegmentCause cause);
  Range map_pages(ExpandableSegment& es, uint64_t address, uint64_t size);
  Range unmap_pages(ExpandableSegment& es, uint64_t address, uint64_t size);
  bool release_available_cached_blocks(const Params& p);
  void release_cached_blocks(uint64_t pool, SegmentCause cause);
  void release_blocks(uint32_t pool, SegmentCause cause);
  void release_block(uint32_t b, SegmentCause cause);
  void release_expandable_segment(uint32_t b);
  void garbage_collect_cached_blocks();

  std::optional<uint64_t> allowed_memory_maximum() const;
  bool gc_enabled() const;
  uint64_t expandable_size(uint32_t b) const;
  uint64_t next_segment_address(uint64_t size, bool expandable);
  void insert_into_blocks(BlockPool& pool, uint32_t b);
  SizeKey size_key(uint32_t b) const;
  AddressKey address_key(uint32_t b) const;
  uint32_t new_block(uint64_t address, uint64_t size, uint64_t stream, uint32_t pool);
  void delete_block(uint32_t b);
  PrivatePool* owner_of(uint32_t pool);
  void record(SegmentAction action, SegmentCause cause, uint32_t pool, uint64_t address,
              uint64_t size, uint64_t stream, bool expandable);
  void add_reserved(uint64_t bytes);

  AllocatorSettings settings_;
  uint64_t capacity_;
  uint64_t device_total_;
  std::function<uint64_t(uint64_t, bool)> segment_address_;
  bool keep_events_;
  uint64_t next_address_;

  std::vector<Block> blocks_;
  std::vector<uint32_t> free_slots_;
  std::vector<BlockPool> pools_;  // kLargePool, kSmallPool, then the private pools' pairs
  std::map<uint64_t, PrivatePool> private_pools_;  // by id
  std::vector<Capture> captures_;                  // captures_underway, in begin order
  std::vector<ExpandableSegment> expandable_;
  FlatHashMap<uint64_t, uint32_t, MixedHash> requests_;  // request id -> block
  ModelStats stats_;
  std::vector<SegmentEvent> events_;
  Gaps gaps_;
};

}  // namespace gmt::analyzer::allocator
