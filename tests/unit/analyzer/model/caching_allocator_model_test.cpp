// SPDX-License-Identifier: Apache-2.0
// The caching allocator model against expectations worked out by hand from PyTorch's
// c10/cuda/CUDACachingAllocator.cpp and c10/core/AllocatorConfig.cpp (the function each comes
// from is named beside it), never from the model's own output.
#include "analyzer/model/allocator/caching_allocator_model.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "analyzer/model/allocator/allocator_settings.h"
#include "analyzer/model/allocator/model_gaps.h"
#include "analyzer/model/allocator/request_size.h"

namespace gmt::analyzer::allocator {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

AllocatorSettings conf(const char* s) {
  const AllocConf c = parse_alloc_conf(s);
  EXPECT_EQ(c.error, "") << s;
  return c.settings;
}

CachingAllocatorModel model_with(const AllocatorSettings& settings, uint64_t capacity = UINT64_MAX,
                                 uint64_t device_total = 0) {
  ModelOptions o;
  o.settings = settings;
  o.capacity = capacity;
  o.device_total = device_total;
  return CachingAllocatorModel(o);
}

// The events as (action, cause, size) to compare whole sequences.
struct Ev {
  SegmentAction action;
  SegmentCause cause;
  uint64_t size;
  bool operator==(const Ev&) const = default;
};
std::vector<Ev> events_of(const CachingAllocatorModel& m) {
  std::vector<Ev> out;
  for (const SegmentEvent& e : m.events()) out.push_back({e.action, e.cause, e.size});
  return out;
}
void PrintTo(const Ev& e, std::ostream* os) {
  *os << "{" << static_cast<int>(e.action) << "," << static_cast<int>(e.cause) << "," << e.size
      << "}";
}

constexpr auto kAlloc = SegmentAction::kAlloc;
constexpr auto kFree = SegmentAction::kFree;
constexpr auto kMap = SegmentAction::kMap;
constexpr auto kUnmap = SegmentAction::kUnmap;
constexpr auto kRequest = SegmentCause::kRequest;

// ---- request sizes (round_size, roundup_power2_next_division, get_allocation_size) ----------

TEST(CachingAllocatorModelSizes, RequestsRoundTo512ByteMultiples) {
  const RoundupDivisions none{};
  EXPECT_EQ(round_size(1, none), 512u);  // kMinBlockSize
  EXPECT_EQ(round_size(511, none), 512u);
  EXPECT_EQ(round_size(512, none), 512u);
  EXPECT_EQ(round_size(513, none), 1024u);
  EXPECT_EQ(round_size(1000, none), 1024u);
  EXPECT_EQ(round_size(5 * kMiB + 1, none), 5 * kMiB + 512);
}

TEST(CachingAllocatorModelSizes, PowerOfTwoDivisionsRoundUpToTheNextStep) {
  // PyTorch's own example beside roundup_power2_next_division: 1200 in 4 divisions is 1280.
  EXPECT_EQ(roundup_power2_next_division(1200, 4), 1280u);
  EXPECT_EQ(roundup_power2_next_division(1024, 4), 1024u);  // a power of two stays
  RoundupDivisions four;
  four.fill(4);
  // round_size: divisions apply only above 512 x divisions (2048 bytes here).
  EXPECT_EQ(round_size(1000, four), 1024u);
  EXPECT_EQ(round_size(3000, four), 3072u);  // [2048, 4096) in steps of 512
  // 1100 MiB lies in [1, 2) GiB: steps of 256 MiB, so 1280 MiB.
  EXPECT_EQ(round_size(1100 * kMiB, four), 1280 * kMiB);
  EXPECT_EQ(round_size(1024 * kMiB, four), 1024 * kMiB);
}

TEST(CachingAllocatorModelSizes, DivisionsAreLookedUpByInterval) {
  // AllocatorConfig.cpp: roundup_power2_divisions(size): log2(size) - 20, clamped to [0, 15].
  EXPECT_EQ(roundup_interval(1000), 0u);
  EXPECT_EQ(roundup_interval(kMiB), 0u);
  EXPECT_EQ(roundup_interval(2 * kMiB), 1u);
  EXPECT_EQ(roundup_interval(300 * kMiB), 8u);
  EXPECT_EQ(roundup_interval(1100 * kMiB), 10u);
  EXPECT_EQ(roundup_interval(1ull << 40), 15u);
}

TEST(CachingAllocatorModelSizes, SegmentSizesByPool) {
  // get_allocation_size: 2 MiB for the small pool (up to 1 MiB), 20 MiB below 10 MiB, else the
  // size rounded up to 2 MiB.
  EXPECT_EQ(allocation_size(1024), 2 * kMiB);
  EXPECT_EQ(allocation_size(kMiB), 2 * kMiB);
  EXPECT_EQ(allocation_size(kMiB + 512), 20 * kMiB);
  EXPECT_EQ(allocation_size(10 * kMiB - 512), 20 * kMiB);
  EXPECT_EQ(allocation_size(10 * kMiB), 10 * kMiB);
  EXPECT_EQ(allocation_size(10 * kMiB + 512), 12 * kMiB);
  EXPECT_TRUE(is_small(kMiB));
  EXPECT_FALSE(is_small(kMiB + 512));
}

// ---- settings (AllocatorConfig.cpp: parseArgs) ----------------------------------------------

TEST(CachingAllocatorModelSettings, ParsesTheKeysTheModelFollows) {
  const AllocConf c = parse_alloc_conf(
      "max_split_size_mb:128, roundup_power2_divisions:[256:8,>:2],"
      "garbage_collection_threshold:0.6,expandable_segments:True,max_non_split_rounding_mb:64");
  ASSERT_EQ(c.error, "");
  EXPECT_EQ(c.settings.max_split_size, 128 * kMiB);
  EXPECT_EQ(c.settings.max_non_split_rounding_size, 64 * kMiB);
  EXPECT_DOUBLE_EQ(c.settings.garbage_collection_threshold, 0.6);
  EXPECT_TRUE(c.settings.expandable_segments);
  // parseRoundUpPower2Divisions: the first interval named (256 MiB: index 8) and all below it
  // take 8; '>' gives 2 to every interval after the last named.
  for (std::size_t i = 0; i <= 8; ++i) EXPECT_EQ(c.settings.roundup_divisions[i], 8u) << i;
  for (std::size_t i = 9; i < kRoundupIntervals; ++i)
    EXPECT_EQ(c.settings.roundup_divisions[i], 2u) << i;
  // 300 MiB in [256, 512) MiB by 8: steps of 32 MiB; 1100 MiB in [1, 2) GiB by 2: 1536 MiB.
  EXPECT_EQ(round_size(300 * kMiB, c.settings.roundup_divisions), 320 * kMiB);
  EXPECT_EQ(round_size(1100 * kMiB, c.settings.roundup_divisions), 1536 * kMiB);
}

TEST(CachingAllocatorModelSettings, RefusesWhatPyTorchRefuses) {
  // parseMaxSplitSize: at least kLargeBuffer (20 MiB).
  EXPECT_NE(parse_alloc_conf("max_split_size_mb:10").error, "");
  EXPECT_EQ(parse_alloc_conf("max_split_size_mb:20").error, "");
  EXPECT_NE(parse_alloc_conf("garbage_collection_threshold:1.0").error, "");
  EXPECT_NE(parse_alloc_conf("roundup_power2_divisions:3").error, "");
  EXPECT_NE(parse_alloc_conf("expandable_segments:yes").error, "");
  EXPECT_NE(parse_alloc_conf("no_such_key:1").error, "");
}

TEST(CachingAllocatorModelSettings, SaysWhatItDoesNotModel) {
  const AllocConf c = parse_alloc_conf("backend:cudaMallocAsync,release_lock_on_cudamalloc:True");
  EXPECT_EQ(c.error, "");
  EXPECT_EQ(c.not_modelled.size(), 1u);
  EXPECT_EQ(c.no_effect, std::vector<std::string>{"release_lock_on_cudamalloc"});
}

TEST(CachingAllocatorModelSettings, AParseResetsTheThreeKeysItDoesNotName) {
  // parseArgs: max_split_size, roundup divisions and the GC threshold go back to defaults.
  AllocatorSettings base = conf("max_split_size_mb:128,roundup_power2_divisions:4");
  base.max_non_split_rounding_size = 64 * kMiB;
  const AllocConf c = parse_alloc_conf("expandable_segments:True", base);
  EXPECT_EQ(c.settings.max_split_size, UINT64_MAX);
  EXPECT_EQ(c.settings.roundup_divisions[0], 0u);
  EXPECT_EQ(c.settings.max_non_split_rounding_size, 64 * kMiB);
  EXPECT_TRUE(c.settings.expandable_segments);
}

TEST(CachingAllocatorModelSettings, FromATracesRecord) {
  format::AllocatorSettingsRecord r;
  r.max_split_size = 64 * kMiB;
  r.roundup_divisions = {4, 4, 8};
  const AllocatorSettings s = AllocatorSettings::of(r);
  EXPECT_EQ(s.max_split_size, 64 * kMiB);
  EXPECT_EQ(s.roundup_divisions[2], 8u);
  EXPECT_EQ(s.roundup_divisions[3], 0u);
}

// ---- segments and blocks --------------------------------------------------------------------

TEST(CachingAllocatorModel, ASmallRequestRoundsTo1024AndOpensA2MiBSegment) {
  CachingAllocatorModel m;
  const AllocOutcome a = m.malloc(1, 1000, 0);
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.rounded, 1024u);
  EXPECT_EQ(a.alloc_size, 2 * kMiB);
  EXPECT_FALSE(a.cached);
  // should_split (small pool): the rest of 2 MiB - 1024 is at least 512 bytes.
  EXPECT_EQ(a.block_size, 1024u);
  EXPECT_EQ(events_of(m), (std::vector<Ev>{{kAlloc, kRequest, 2 * kMiB}}));
  EXPECT_TRUE(m.events()[0].small);
  // The next one is cut from the rest, right after the first.
  const AllocOutcome b = m.malloc(2, 1000, 0);
  EXPECT_TRUE(b.cached);
  EXPECT_EQ(b.address, a.address + 1024);
  EXPECT_EQ(m.events().size(), 1u);
  EXPECT_EQ(m.stats().allocated_bytes, 2048u);
  EXPECT_EQ(m.stats().reserved_bytes, 2 * kMiB);
  EXPECT_EQ(m.stats().requested_bytes, 2000u);
}

TEST(CachingAllocatorModel, AFiveMiBRequestOpensA20MiBSegmentThatTheNextOneSplits) {
  CachingAllocatorModel m;
  const AllocOutcome a = m.malloc(1, 5 * kMiB, 0);
  EXPECT_EQ(a.alloc_size, 20 * kMiB);  // get_allocation_size: 1-10 MiB take kLargeBuffer
  EXPECT_EQ(a.block_size, 5 * kMiB);   // should_split: 15 MiB left, above 1 MiB
  const AllocOutcome b = m.malloc(2, 5 * kMiB, 0);
  EXPECT_TRUE(b.cached);
  EXPECT_EQ(b.address, a.address + 5 * kMiB);
  EXPECT_EQ(b.block_size, 5 * kMiB);
  EXPECT_EQ(events_of(m), (std::vector<Ev>{{kAlloc, kRequest, 20 * kMiB}}));
  EXPECT_EQ(m.stats().allocated_bytes, 10 * kMiB);
  EXPECT_EQ(m.stats().max_reserved_bytes, 20 * kMiB);
}

TEST(CachingAllocatorModel, ATwelveMiBRequestOpensATwelveMiBSegment) {
  CachingAllocatorModel m;
  const AllocOutcome a = m.malloc(1, 12 * kMiB, 0);
  EXPECT_EQ(a.alloc_size, 12 * kMiB);
  EXPECT_EQ(a.block_size, 12 * kMiB);
  // 11 MiB + 1 byte: rounded to 11 MiB + 512, a 12 MiB segment; the 1 MiB - 512 left is not
  // above kSmallSize, so the block is the whole segment.
  const AllocOutcome b = m.malloc(2, 11 * kMiB + 1, 0);
  EXPECT_EQ(b.rounded, 11 * kMiB + 512);
  EXPECT_EQ(b.alloc_size, 12 * kMiB);
  EXPECT_EQ(b.block_size, 12 * kMiB);
  EXPECT_EQ(events_of(m),
            (std::vector<Ev>{{kAlloc, kRequest, 12 * kMiB}, {kAlloc, kRequest, 12 * kMiB}}));
  EXPECT_EQ(m.stats().allocated_bytes, 24 * kMiB);
  EXPECT_EQ(m.stats().requested_bytes, 23 * kMiB + 1);
}

TEST(CachingAllocatorModel, FreesMergeWithFreeNeighbours) {
  CachingAllocatorModel m;
  const uint64_t base = m.malloc(1, 1000, 0).address;
  m.malloc(2, 1000, 0);
  m.malloc(3, 1000, 0);
  ASSERT_TRUE(m.free(2));
  ASSERT_TRUE(m.free(1));  // free_block: merges with 2 into 2048 bytes at the base
  // Best fit for 2048 bytes is that merged block, not the segment's tail.
  const AllocOutcome c = m.malloc(4, 2000, 0);
  EXPECT_EQ(c.address, base);
  EXPECT_EQ(c.block_size, 2048u);
  ASSERT_TRUE(m.free(4));
  ASSERT_TRUE(m.free(3));  // merges both ways: the whole segment is one free block again
  const std::vector<SegmentView> s = m.segments();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].size, 2 * kMiB);
  ASSERT_EQ(s[0].blocks.size(), 1u);
  EXPECT_FALSE(s[0].blocks[0].allocated);
  EXPECT_EQ(m.stats().allocated_bytes, 0u);
  // empty_cache: an unsplit cached block goes back to CUDA.
  m.empty_cache();
  EXPECT_EQ(events_of(m), (std::vector<Ev>{{kAlloc, kRequest, 2 * kMiB},
                                           {kFree, SegmentCause::kEmptyCache, 2 * kMiB}}));
  EXPECT_EQ(m.stats().reserved_bytes, 0u);
  EXPECT_TRUE(m.segments().empty());
}

TEST(CachingAllocatorModel, TheSegmentsViewShowsBlocksAndFreePieces) {
  CachingAllocatorModel m;
  const AllocOutcome a = m.malloc(7, 5 * kMiB, 0);
  m.malloc(8, 3 * kMiB, 0);
  m.free(7);
  const std::vector<SegmentView> s = m.segments();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].address, a.address);
  EXPECT_EQ(s[0].size, 20 * kMiB);
  EXPECT_EQ(s[0].allocated_bytes, 3 * kMiB);
  ASSERT_EQ(s[0].blocks.size(), 3u);
  EXPECT_FALSE(s[0].blocks[0].allocated);  // 7's 5 MiB, free
  EXPECT_EQ(s[0].blocks[0].size, 5 * kMiB);
  EXPECT_TRUE(s[0].blocks[1].allocated);
  EXPECT_EQ(s[0].blocks[1].request_id, 8u);
  EXPECT_EQ(s[0].blocks[2].size, 12 * kMiB);
}

TEST(CachingAllocatorModel, EmptyCacheKeepsSegmentsThatAreSplit) {
  CachingAllocatorModel m;
  m.malloc(1, 5 * kMiB, 0);
  m.empty_cache();  // release_blocks frees only blocks with neither prev nor next
  EXPECT_EQ(m.stats().reserved_bytes, 20 * kMiB);
  EXPECT_EQ(m.events().size(), 1u);
}

TEST(CachingAllocatorModel, BlocksAreNotSharedAcrossStreams) {
  CachingAllocatorModel m;
  m.malloc(1, 5 * kMiB, 1);
  m.free(1);
  // get_free_block: the cached block is stream 1's; stream 2 needs a segment of its own.
  EXPECT_FALSE(m.malloc(2, 5 * kMiB, 2).cached);
  EXPECT_TRUE(m.malloc(3, 5 * kMiB, 1).cached);
  EXPECT_EQ(events_of(m),
            (std::vector<Ev>{{kAlloc, kRequest, 20 * kMiB}, {kAlloc, kRequest, 20 * kMiB}}));
}

TEST(CachingAllocatorModel, WithoutMaxSplitSizeA200MiBBlockIsSplit) {
  CachingAllocatorModel m;
  m.malloc(1, 200 * kMiB, 0);
  m.free(1);
  const AllocOutcome b = m.malloc(2, 100 * kMiB, 0);
  EXPECT_TRUE(b.cached);
  EXPECT_EQ(b.block_size, 100 * kMiB);
  EXPECT_EQ(m.events().size(), 1u);
}

TEST(CachingAllocatorModel, MaxSplitSize128StopsSplittingA200MiBBlock) {
  CachingAllocatorModel m = model_with(conf("max_split_size_mb:128"));
  m.malloc(1, 200 * kMiB, 0);
  m.free(1);
  // get_free_block: a request below max_split_size never takes an oversize block.
  const AllocOutcome b = m.malloc(2, 100 * kMiB, 0);
  EXPECT_FALSE(b.cached);
  EXPECT_EQ(b.block_size, 100 * kMiB);
  EXPECT_EQ(events_of(m),
            (std::vector<Ev>{{kAlloc, kRequest, 200 * kMiB}, {kAlloc, kRequest, 100 * kMiB}}));
}

TEST(CachingAllocatorModel, AnOversizeBlockServesRequestsWithin20MiBOfIt) {
  // get_free_block: an oversize request takes a cached oversize block smaller than the request
  // plus max_non_split_rounding_size (kLargeBuffer), whole: should_split refuses at or above
  // max_split_size.
  CachingAllocatorModel m = model_with(conf("max_split_size_mb:128"));
  m.malloc(1, 200 * kMiB, 0);
  m.free(1);
  const AllocOutcome near = m.malloc(2, 190 * kMiB, 0);
  EXPECT_TRUE(near.cached);
  EXPECT_EQ(near.block_size, 200 * kMiB);
  m.free(2);
  const AllocOutcome far = m.malloc(3, 180 * kMiB, 0);  // 200 >= 180 + 20: refused
  EXPECT_FALSE(far.cached);
  EXPECT_EQ(far.block_size, 180 * kMiB);
}

TEST(CachingAllocatorModel, RoundupPower2Divisions4RoundsA1100MiBRequestTo1280MiB) {
  CachingAllocatorModel m = model_with(conf("roundup_power2_divisions:4"));
  const AllocOutcome a = m.malloc(1, 1100 * kMiB, 0);
  EXPECT_EQ(a.rounded, 1280 * kMiB);
  EXPECT_EQ(a.alloc_size, 1280 * kMiB);
  EXPECT_EQ(a.block_size, 1280 * kMiB);
  EXPECT_EQ(m.stats().allocated_bytes, 1280 * kMiB);
  EXPECT_EQ(m.stats().requested_bytes, 1100 * kMiB);
}

// ---- a failed cudaMalloc --------------------------------------------------------------------

TEST(CachingAllocatorModel, AFailedCudaMallocReleasesTheCacheAndRetries) {
  CachingAllocatorModel m = model_with({}, 100 * kMiB);
  m.malloc(1, 60 * kMiB, 0);
  m.free(1);
  // 60 + 80 MiB pass the capacity: release_available_cached_blocks does nothing without a
  // max_split_size; release_cached_blocks frees the cached segment; the retry fits.
  const AllocOutcome b = m.malloc(2, 80 * kMiB, 0);
  EXPECT_TRUE(b.ok);
  EXPECT_EQ(events_of(m), (std::vector<Ev>{{kAlloc, kRequest, 60 * kMiB},
                                           {kFree, SegmentCause::kReleaseAll, 60 * kMiB},
                                           {kAlloc, kRequest, 80 * kMiB}}));
  EXPECT_EQ(m.stats().num_alloc_retries, 1u);
  EXPECT_EQ(m.stats().max_reserved_bytes, 80 * kMiB);
}

TEST(CachingAllocatorModel, WithMaxSplitSizeOnlyOversizeBlocksGoFirst) {
  // release_available_cached_blocks: no single oversize block of 250 MiB or more: the largest
  // ones go, 200 then 150 MiB, until 250 MiB went.
  CachingAllocatorModel m = model_with(conf("max_split_size_mb:128"), 500 * kMiB);
  m.malloc(1, 200 * kMiB, 0);
  m.malloc(2, 150 * kMiB, 0);
  m.free(1);
  m.free(2);
  EXPECT_TRUE(m.malloc(3, 250 * kMiB, 0).ok);
  const auto one = SegmentCause::kReleaseOversize;
  EXPECT_EQ(events_of(m), (std::vector<Ev>{{kAlloc, kRequest, 200 * kMiB},
                                           {kAlloc, kRequest, 150 * kMiB},
                                           {kFree, one, 200 * kMiB},
                                           {kFree, one, 150 * kMiB},
                                           {kAlloc, kRequest, 250 * kMiB}}));
  EXPECT_EQ(m.stats().num_alloc_retries, 0u);
}

TEST(CachingAllocatorModel, WithMaxSplitSizeTheSmallestLargeEnoughOversizeBlockGoes) {
  CachingAllocatorModel m = model_with(conf("max_split_size_mb:128"), 600 * kMiB);
  m.malloc(1, 300 * kMiB, 0);
  m.malloc(2, 200 * kMiB, 0);
  m.free(1);
  m.free(2);
  // get_free_block refuses the 300 MiB block (300 >= 250 + 20); cudaMalloc of 250 fails (750 >
  // 600); the one oversize block of at least 250 MiB goes; 450 MiB fit.
  EXPECT_TRUE(m.malloc(3, 250 * kMiB, 0).ok);
  EXPECT_EQ(events_of(m), (std::vector<Ev>{{kAlloc, kRequest, 300 * kMiB},
                                           {kAlloc, kRequest, 200 * kMiB},
                                           {kFree, SegmentCause::kReleaseOversize, 300 * kMiB},
                                           {kAlloc, kRequest, 250 * kMiB}}));
  EXPECT_EQ(m.stats().reserved_bytes, 450 * kMiB);
}

TEST(CachingAllocatorModel, ARequestThatCannotFitFailsAsPyTorchsOutOfMemoryError) {
  CachingAllocatorModel m = model_with({}, 100 * kMiB);
  m.malloc(1, 60 * kMiB, 0);
  EXPECT_FALSE(m.would_fit(50 * kMiB, 0));
  EXPECT_TRUE(m.would_fit(40 * kMiB, 0));
  EXPECT_EQ(m.events().size(), 1u);  // would_fit leaves the model as it was
  EXPECT_EQ(m.stats().requests, 1u);
  const AllocOutcome b = m.malloc(2, 50 * kMiB, 0);
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.alloc_size, 50 * kMiB);  // "Tried to allocate 50.00 MiB"
  EXPECT_EQ(m.stats().num_ooms, 1u);
  EXPECT_EQ(m.stats().num_alloc_retries, 1u);
  EXPECT_FALSE(m.free(2));  // never held
  // The capacity may change (other processes' memory): then it fits.
  m.set_capacity(200 * kMiB);
  EXPECT_TRUE(m.malloc(3, 50 * kMiB, 0).ok);
}

// ---- garbage collection ---------------------------------------------------------------------

TEST(CachingAllocatorModel, GarbageCollectionFreesBlocksOlderThanTheAverage) {
  // A fraction of 0.5 of 200 MiB allows 100 MiB; a threshold of 0.5 collects above 50 MiB.
  AllocatorSettings s = conf("garbage_collection_threshold:0.5");
  s.per_process_memory_fraction = 0.5;
  CachingAllocatorModel m = model_with(s, UINT64_MAX, 200 * kMiB);
  m.malloc(1, 30 * kMiB, 0);  // get_free_block call 1
  m.free(1);                  // cached at count 1
  m.malloc(2, 40 * kMiB, 0);  // call 2 finds no 40 MiB block; 30 MiB reserved: no collection
  m.free(2);                  // cached at count 2
  // Call 3 finds no 44 MiB block; 70 MiB reserved pass 50: 20 MiB to reclaim. Ages 2 and 1,
  // average 1.5: the 30 MiB block goes, which is enough; 40 + 44 MiB fit the 100 allowed.
  EXPECT_TRUE(m.malloc(3, 44 * kMiB, 0).ok);
  EXPECT_EQ(events_of(m), (std::vector<Ev>{{kAlloc, kRequest, 30 * kMiB},
                                           {kAlloc, kRequest, 40 * kMiB},
                                           {kFree, SegmentCause::kGarbageCollection, 30 * kMiB},
                                           {kAlloc, kRequest, 44 * kMiB}}));
}

TEST(CachingAllocatorModel, GarbageCollectionNeedsAMemoryFraction) {
  CachingAllocatorModel m =
      model_with(conf("garbage_collection_threshold:0.5"), UINT64_MAX, 200 * kMiB);
  m.malloc(1, 30 * kMiB, 0);
  m.free(1);
  m.malloc(2, 40 * kMiB, 0);
  m.free(2);
  m.malloc(3, 44 * kMiB, 0);
  EXPECT_EQ(m.events().size(), 3u);  // three segments, nothing freed
  EXPECT_EQ(m.stats().reserved_bytes, 114 * kMiB);
}

TEST(CachingAllocatorModel, AMemoryFractionCapsWhatTheAllocatorHolds) {
  AllocatorSettings s;
  s.per_process_memory_fraction = 0.5;
  CachingAllocatorModel m = model_with(s, UINT64_MAX, 200 * kMiB);
  EXPECT_TRUE(m.malloc(1, 100 * kMiB, 0).ok);
  EXPECT_FALSE(m.malloc(2, 2 * kMiB, 0).ok);  // a 20 MiB segment would pass 100 MiB
}

// ---- expandable segments --------------------------------------------------------------------

TEST(CachingAllocatorModel, ExpandableSegmentsMapPagesAsRequestsGrow) {
  CachingAllocatorModel m = model_with(conf("expandable_segments:True"));
  // A new segment of 20 MiB pages (large pool): one page covers 5 MiB; should_split with
  // expandable segments keeps any rest of 512 bytes.
  const AllocOutcome a = m.malloc(1, 5 * kMiB, 0);
  EXPECT_EQ(a.block_size, 5 * kMiB);
  // 30 MiB: the 15 MiB free at the mapped end plus one more page (try_allocate_expandable_block
  // maps only what the free block lacks), cut at 30 MiB.
  const AllocOutcome b = m.malloc(2, 30 * kMiB, 0);
  EXPECT_EQ(b.address, a.address + 5 * kMiB);
  EXPECT_EQ(b.block_size, 30 * kMiB);
  EXPECT_EQ(events_of(m),
            (std::vector<Ev>{{kMap, kRequest, 20 * kMiB}, {kMap, kRequest, 20 * kMiB}}));
  EXPECT_EQ(m.events()[1].address, a.address + 20 * kMiB);
  EXPECT_EQ(m.stats().reserved_bytes, 40 * kMiB);
  EXPECT_EQ(m.stats().segments, 0u);  // no cudaMalloc
  const std::vector<SegmentView> s = m.segments();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_TRUE(s[0].expandable);
  EXPECT_EQ(s[0].size, 40 * kMiB);
  ASSERT_EQ(s[0].blocks.size(), 3u);
  EXPECT_EQ(s[0].blocks[2].size, 5 * kMiB);
  EXPECT_FALSE(s[0].blocks[2].allocated);
  // Freed and emptied: the free pages are unmapped (release_blocks, unmap_block) and the
  // segment, with nothing mapped, goes.
  m.free(1);
  m.free(2);
  m.empty_cache();
  EXPECT_EQ(m.events().back().action, kUnmap);
  EXPECT_EQ(m.events().back().size, 40 * kMiB);
  EXPECT_EQ(m.events().back().address, a.address);
  EXPECT_EQ(m.stats().reserved_bytes, 0u);
  EXPECT_EQ(m.stats().max_reserved_bytes, 40 * kMiB);
  EXPECT_TRUE(m.segments().empty());
}

TEST(CachingAllocatorModel, ExpandableSmallPoolPagesAre2MiB) {
  CachingAllocatorModel m = model_with(conf("expandable_segments:True"));
  EXPECT_EQ(m.malloc(1, 1000, 0).block_size, 1024u);
  EXPECT_EQ(events_of(m), (std::vector<Ev>{{kMap, kRequest, 2 * kMiB}}));
  EXPECT_TRUE(m.events()[0].small);
}

TEST(CachingAllocatorModel, ExpandableSegmentsMapWholePagesOrNothing) {
  // ExpandableSegment::map: 25 MiB need two 20 MiB pages, past a 30 MiB capacity.
  CachingAllocatorModel m = model_with(conf("expandable_segments:True"), 30 * kMiB);
  EXPECT_FALSE(m.malloc(1, 25 * kMiB, 0).ok);
  EXPECT_EQ(m.stats().reserved_bytes, 0u);
  EXPECT_TRUE(m.malloc(2, 15 * kMiB, 0).ok);
  EXPECT_EQ(m.stats().reserved_bytes, 20 * kMiB);
}

TEST(CachingAllocatorModel, EmptyCacheUnmapsOnlyWholeFreePages) {
  CachingAllocatorModel m = model_with(conf("expandable_segments:True"));
  m.malloc(1, 5 * kMiB, 0);
  m.malloc(2, 30 * kMiB, 0);  // [0, 5) and [5, 35) MiB held, pages [0, 40) mapped
  m.free(2);                  // free [5, 40): the page [20, 40) is wholly free
  m.empty_cache();
  EXPECT_EQ(m.events().back().action, kUnmap);
  EXPECT_EQ(m.events().back().size, 20 * kMiB);
  EXPECT_EQ(m.stats().reserved_bytes, 20 * kMiB);
}

// ---- CUDA graphs' private pools -------------------------------------------------------------

TEST(CachingAllocatorModel, ACaptureServesItsRequestsFromAPrivatePool) {
  CachingAllocatorModel m;
  m.begin_allocate_to_pool(7, uint64_t{0});
  m.malloc(1, 1000, 0);
  m.malloc(2, 1000, 1);  // not the capturing stream: the default pool
  m.end_allocate_to_pool(7);
  m.free(1);
  ASSERT_EQ(m.events().size(), 2u);
  EXPECT_EQ(m.events()[0].pool, 7u);
  EXPECT_EQ(m.events()[1].pool, 0u);
  // After the capture, stream 0 cannot reuse the private pool's free memory.
  EXPECT_FALSE(m.malloc(3, 1000, 0).cached);
  m.free(2);
  m.free(3);
  m.empty_cache();  // the default pool's segments go; the graph's pool still has a use
  EXPECT_EQ(m.stats().reserved_bytes, 2 * kMiB);
  m.release_pool(7);  // releasePool: no use left, freeable
  m.empty_cache();
  EXPECT_EQ(m.stats().reserved_bytes, 0u);
  EXPECT_EQ(m.events().back().pool, 7u);
}

// ---- invariants over a long replay ----------------------------------------------------------

// What PyTorch's structures keep true whatever the requests: a segment's blocks tile it, no two
// free neighbours stay apart (free_block and map_block merge them), the reserved bytes are the
// segments' and the allocated bytes the blocks handed out.
void expect_consistent(const CachingAllocatorModel& m, uint64_t capacity) {
  uint64_t reserved = 0;
  uint64_t allocated = 0;
  for (const SegmentView& s : m.segments()) {
    reserved += s.size;
    uint64_t at = s.address;
    bool free_before = false;
    for (const BlockView& b : s.blocks) {
      ASSERT_EQ(b.address, at);
      ASSERT_FALSE(!b.allocated && free_before) << "free neighbours not merged";
      free_before = !b.allocated;
      if (b.allocated) allocated += b.size;
      at += b.size;
    }
    ASSERT_EQ(at, s.address + s.size);
  }
  ASSERT_EQ(reserved, m.stats().reserved_bytes);
  ASSERT_EQ(allocated, m.stats().allocated_bytes);
  ASSERT_LE(m.stats().reserved_bytes, capacity);
  ASSERT_LE(m.stats().reserved_bytes, m.stats().max_reserved_bytes);
}

void replay_randomly(const char* settings, uint64_t seed) {
  constexpr uint64_t kCapacity = 3ull << 30;
  AllocatorSettings s = conf(settings);
  s.per_process_memory_fraction = 0.9;
  CachingAllocatorModel m = model_with(s, kCapacity, kCapacity);
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> live;
  uint64_t id = 0;
  for (int i = 0; i < 20000; ++i) {
    const uint64_t op = rng() % 100;
    if (op < 55 || live.empty()) {
      // Sizes from 1 byte to 256 MiB, spread over the powers of two.
      const uint64_t size = 1 + rng() % (1ull << (rng() % 29));
      if (m.malloc(id, size, rng() % 3).ok) live.push_back(id);
      ++id;
    } else if (op < 98) {
      const std::size_t k = rng() % live.size();
      ASSERT_TRUE(m.free(live[k]));
      live[k] = live.back();
      live.pop_back();
    } else {
      m.empty_cache();
    }
    if (i % 500 == 0) {
      expect_consistent(m, kCapacity);
      if (testing::Test::HasFatalFailure()) return;
    }
  }
  for (const uint64_t r : live) m.free(r);
  m.empty_cache();
  expect_consistent(m, kCapacity);
  // Everything freed and emptied: nothing is left reserved.
  EXPECT_EQ(m.stats().reserved_bytes, 0u) << settings;
}

TEST(CachingAllocatorModel, InvariantsHoldOverARandomReplay) {
  replay_randomly("", 1);
  replay_randomly("max_split_size_mb:64,roundup_power2_divisions:[16:4,>:8]", 2);
  replay_randomly("garbage_collection_threshold:0.5", 3);
  replay_randomly("expandable_segments:True", 4);
  replay_randomly("expandable_segments:True,max_split_size_mb:64", 5);
}

// ---- what is not modelled -------------------------------------------------------------------

TEST(CachingAllocatorModel, SaysWhatItDidNotModel) {
  CachingAllocatorModel m;
  m.malloc(1, 1000, 0);
  m.record_stream(1, 0);  // the allocation stream: nothing to model
  EXPECT_EQ(m.gaps().count(Gap::kCrossStreamUse), 0u);
  m.record_stream(1, 5);
  EXPECT_EQ(m.gaps().count(Gap::kCrossStreamUse), 1u);
  EXPECT_FALSE(m.free(99));
  EXPECT_EQ(m.gaps().count(Gap::kUnknownFree), 1u);
  EXPECT_TRUE(m.gaps().present(Gap::kSyntheticAddresses));
  EXPECT_TRUE(m.gaps().present(Gap::kCapacityIsOneNumber));  // always
  EXPECT_FALSE(m.gaps().present(Gap::kUserMemPool));
  EXPECT_EQ(describe(Gap::kCrossStreamUse).substr(0, 14), "not modelled: ");
}

TEST(CachingAllocatorModel, UsesTheSegmentAddressesItIsGiven) {
  ModelOptions o;
  std::vector<uint64_t> asked;
  o.segment_address = [&](uint64_t size, bool) {
    asked.push_back(size);
    return 0x1000000000 * asked.size();
  };
  CachingAllocatorModel m(o);
  EXPECT_EQ(m.malloc(1, 12 * kMiB, 0).address, 0x1000000000u);
  EXPECT_EQ(m.malloc(2, 1000, 0).address, 0x2000000000u);
  EXPECT_EQ(asked, (std::vector<uint64_t>{12 * kMiB, 2 * kMiB}));
  EXPECT_TRUE(m.would_fit(12 * kMiB, 0));  // a trial takes no address from the caller's source
  EXPECT_EQ(asked.size(), 2u);
  EXPECT_FALSE(m.gaps().present(Gap::kSyntheticAddresses));
}

TEST(CachingAllocatorModel, AZeroByteRequestTakesNoBlock) {
  CachingAllocatorModel m;
  EXPECT_TRUE(m.malloc(1, 0, 0).ok);
  EXPECT_TRUE(m.events().empty());
  EXPECT_TRUE(m.free(1));
  EXPECT_EQ(m.gaps().count(Gap::kUnknownFree), 0u);
}

}  // namespace
}  // namespace gmt::analyzer::allocator
