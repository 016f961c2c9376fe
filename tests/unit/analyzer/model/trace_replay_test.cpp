// SPDX-License-Identifier: Apache-2.0
// The allocator model fed a trace's PyTorch block events (allocator/trace_replay.h): records
// written as PyTorch's allocator writes them are reproduced exactly (every segment in order,
// the highest reserved and allocated); a recording the rules would not give is said to diverge,
// and where; a what-if with expandable segments predicts less reserved.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "analyzer/model/allocator/replay_events.h"
#include "analyzer/model/allocator/trace_replay.h"
#include "analyzer/model/allocator/whatif_prediction.h"
#include "tests/unit/chunked_file.h"
#include "tests/unit/trace_bytes.h"

namespace gmt::analyzer::allocator {
namespace {

using format::BlockAction;
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kSmallSeg = 0x7f1000000000;
constexpr uint64_t kSegA = 0x7f2000000000;
constexpr uint64_t kSegB = 0x7f3000000000;
constexpr uint64_t kSegC = 0x7f4000000000;

class Records {
 public:
  Records& block(BlockAction action, uint64_t address, uint64_t size, int device = 0) {
    format::BlockRecord r;
    r.time_ns = ++time_;
    r.thread = 100;
    r.allocator = static_cast<uint32_t>(format::BlockAllocator::kPytorch);
    r.action = static_cast<uint32_t>(action);
    r.device = device;
    r.address = address;
    r.size = size;
    records_.emplace_back(r);
    return *this;
  }
  Records& segment(uint64_t address, uint64_t size) {
    return block(BlockAction::kSegmentAlloc, address, size);
  }
  Records& alloc(uint64_t address, uint64_t size) {
    return block(BlockAction::kAlloc, address, size);
  }
  Records& free(uint64_t address, uint64_t size) {
    block(BlockAction::kFreeRequested, address, size);
    return block(BlockAction::kFreeCompleted, address, size);
  }
  Records& failed_cuda_malloc(uint64_t size) {
    format::AllocFailedRecord r;
    r.time_ns = ++time_;
    r.thread = 100;
    r.device = 0;
    r.size = size;
    r.error = 2;
    records_.emplace_back(r);
    return *this;
  }
  Records& max_split_size(uint64_t bytes) {
    format::AllocatorSettingsRecord r;
    r.time_ns = ++time_;
    r.allocator = static_cast<uint32_t>(format::BlockAllocator::kPytorch);
    r.max_split_size = bytes;
    records_.emplace_back(r);
    return *this;
  }
  Records& name(uint32_t id, const std::string& text) {
    format::NameRecord r;
    r.time_ns = ++time_;
    r.id = id;
    r.text = text;
    records_.emplace_back(r);
    return *this;
  }
  Records& scope(format::ScopeKind kind, format::ScopeAction action, uint32_t name = 0) {
    format::ScopeRecord r;
    r.time_ns = ++time_;
    r.thread = 100;
    r.kind = static_cast<uint32_t>(kind);
    r.action = static_cast<uint32_t>(action);
    r.name = name;
    records_.emplace_back(r);
    return *this;
  }
  Records& phase(format::PhaseAction action, uint32_t name = 0) {
    format::PhaseRecord r;
    r.time_ns = ++time_;
    r.tid = 100;
    r.action = static_cast<uint32_t>(action);
    r.name = name;
    records_.emplace_back(r);
    return *this;
  }
  Records& device(uint64_t total) {
    format::DeviceRecord r;
    r.time_ns = ++time_;
    r.device = 0;
    r.total_bytes = total;
    records_.emplace_back(r);
    return *this;
  }

  TraceReplayResult replay(const ReplayOptions& options = {}) const {
    TraceReplay replay(options);
    for (const format::Record& r : records_) replay.apply(r);
    return replay.finish();
  }
  std::vector<uint8_t> file() const {
    test::ChunkedFile file(1 << 16);
    std::vector<format::Record> all{test::process_record()};
    all.insert(all.end(), records_.begin(), records_.end());
    file.add_chunk_of(0, 0, 100, all);
    return file.bytes();
  }

 private:
  std::vector<format::Record> records_;
  uint64_t time_ = 0;
};

// A run as PyTorch's allocator makes it with the default settings:
//   1000 B -> 1 KiB block of a new 2 MiB small segment; 3000 B -> 3 KiB, split off its rest;
//   5 MiB -> a new 20 MiB segment (requests below 10 MiB); 12 MiB -> the 15 MiB left of it,
//   split (3 MiB left is more than 1 MiB); 30 MiB -> a segment of its own;
//   the 5 MiB and 30 MiB blocks freed; empty_cache() gives back the 30 MiB segment (the only
//   one wholly free); 30 MiB again -> a new segment.
Records pytorch_run(uint64_t last_segment = 30 * kMiB) {
  Records r;
  r.segment(kSmallSeg, 2 * kMiB).alloc(kSmallSeg, 1000);
  r.alloc(kSmallSeg + 1024, 3000);
  r.segment(kSegA, 20 * kMiB).alloc(kSegA, 5 * kMiB);
  r.alloc(kSegA + 5 * kMiB, 12 * kMiB);
  r.segment(kSegB, 30 * kMiB).alloc(kSegB, 30 * kMiB);
  r.free(kSegA, 5 * kMiB).free(kSegB, 30 * kMiB);
  r.block(BlockAction::kSegmentFree, kSegB, 30 * kMiB);
  r.segment(kSegC, last_segment).alloc(kSegC, 30 * kMiB);
  return r;
}

TEST(TraceReplay, ARunByPytorchsRulesIsReproducedExactly) {
  const TraceReplayResult result = pytorch_run().replay();
  ASSERT_EQ(result.devices.size(), 1u);
  const DeviceReplayResult& d = result.devices[0];
  EXPECT_EQ(result.block_events, 15u);
  EXPECT_TRUE(d.exact());
  EXPECT_FALSE(d.divergence.has_value());
  EXPECT_EQ(d.recorded_segments, 4u);
  EXPECT_EQ(d.modelled_segments, 4u);
  EXPECT_EQ(d.matched_segments, 4u);
  EXPECT_EQ(d.requests, 6u);
  EXPECT_EQ(d.empty_cache_mirrored, 1u);
  EXPECT_EQ(d.allocator_releases, 0u);
  EXPECT_EQ(d.synthetic_addresses, 0u);  // the recorded addresses, all along
  // 2 + 20 + 30 MiB, and again after the 30 MiB segment went and came back.
  EXPECT_EQ(d.recorded_max_reserved, 52 * kMiB);
  EXPECT_EQ(d.stats.max_reserved_bytes, 52 * kMiB);
  // 1 KiB + 3 KiB + 5 MiB + 12 MiB + 30 MiB held at once.
  EXPECT_EQ(d.recorded_max_allocated, 4096 + 47 * kMiB);
  EXPECT_EQ(d.stats.max_allocated_bytes, 4096 + 47 * kMiB);
  EXPECT_EQ(d.stats.reserved_bytes, 52 * kMiB);
}

TEST(TraceReplay, ASegmentTheRulesWouldNotGiveIsWhereItDiverges) {
  // The last cudaMalloc recorded as 32 MiB, where PyTorch asks 30 MiB for a 30 MiB request.
  const TraceReplayResult result = pytorch_run(32 * kMiB).replay();
  const DeviceReplayResult& d = result.devices[0];
  EXPECT_FALSE(d.exact());
  ASSERT_TRUE(d.divergence.has_value());
  EXPECT_EQ(d.divergence->kind, Divergence::Kind::kSegment);
  EXPECT_EQ(d.divergence->segment, 3u);  // three matched before it
  EXPECT_EQ(d.divergence->request, 5u);  // at the sixth request
  ASSERT_TRUE(d.divergence->recorded && d.divergence->modelled);
  EXPECT_EQ(d.divergence->recorded->size, 32 * kMiB);
  EXPECT_EQ(d.divergence->modelled->size, 30 * kMiB);
  EXPECT_EQ(d.matched_segments, 3u);
  EXPECT_EQ(d.recorded_max_reserved, 54 * kMiB);
  EXPECT_EQ(d.stats.max_reserved_bytes, 52 * kMiB);
}

TEST(TraceReplay, AReleaseTheModelWouldNotMakeDiverges) {
  // empty_cache() recorded giving back the 20 MiB segment whose 12 MiB block is still held.
  Records r;
  r.segment(kSegA, 20 * kMiB).alloc(kSegA, 5 * kMiB).alloc(kSegA + 5 * kMiB, 12 * kMiB);
  r.free(kSegA, 5 * kMiB);
  r.block(BlockAction::kSegmentFree, kSegA, 20 * kMiB);
  r.alloc(kSegA, kMiB * 2);
  const DeviceReplayResult d = r.replay().devices[0];
  EXPECT_FALSE(d.exact());
  ASSERT_TRUE(d.divergence.has_value());
  EXPECT_EQ(d.divergence->kind, Divergence::Kind::kRelease);
  EXPECT_EQ(d.divergence->recorded_bytes, 20 * kMiB);
  EXPECT_EQ(d.divergence->modelled_bytes, 0u);
  EXPECT_EQ(d.divergence->request, 2u);  // at the third request
}

// A failed cudaMalloc: PyTorch gives back its wholly free segments and retries; the unchanged
// replay reproduces it with the capacity the recording shows, and learns that capacity.
TEST(TraceReplay, TheAllocatorsReleaseAfterAFailedCudaMallocIsReproduced) {
  Records r;
  r.device(1024 * kMiB);
  r.segment(kSegA, 100 * kMiB).alloc(kSegA, 100 * kMiB).free(kSegA, 100 * kMiB);
  r.failed_cuda_malloc(200 * kMiB);
  r.block(BlockAction::kSegmentFree, kSegA, 100 * kMiB);
  r.segment(kSegB, 200 * kMiB).alloc(kSegB, 200 * kMiB);
  const DeviceReplayResult d = r.replay().devices[0];
  EXPECT_TRUE(d.exact());
  EXPECT_EQ(d.allocator_releases, 1u);
  EXPECT_EQ(d.empty_cache_mirrored, 0u);
  EXPECT_EQ(d.matched_segments, 2u);
  EXPECT_EQ(d.stats.max_reserved_bytes, 200 * kMiB);
  EXPECT_EQ(d.recorded_capacity_bound, 300 * kMiB - 1);
  EXPECT_EQ(d.total_bytes, 1024 * kMiB);
}

// With max_split_size_mb, PyTorch first gives back cached oversize blocks
// (release_available_cached_blocks), then completes deferred frees and gives back every free
// segment (release_cached_blocks): a free completed between the two is still the request's own
// release, not an empty_cache().
TEST(TraceReplay, AFreeCompletedInsideTheReleaseBelongsToIt) {
  Records r;
  r.max_split_size(50 * kMiB);
  r.segment(kSegA, 60 * kMiB).alloc(kSegA, 60 * kMiB).free(kSegA, 60 * kMiB);
  r.segment(kSegB, 100 * kMiB).alloc(kSegB, 100 * kMiB);
  r.block(BlockAction::kFreeRequested, kSegB, 100 * kMiB);  // used on another stream
  r.failed_cuda_malloc(150 * kMiB);
  r.block(BlockAction::kSegmentFree, kSegA, 60 * kMiB);
  r.block(BlockAction::kFreeCompleted, kSegB, 100 * kMiB);
  r.block(BlockAction::kSegmentFree, kSegB, 100 * kMiB);
  r.segment(kSegC, 150 * kMiB).alloc(kSegC, 150 * kMiB);
  const DeviceReplayResult d = r.replay().devices[0];
  EXPECT_TRUE(d.exact());
  EXPECT_EQ(d.empty_cache_mirrored, 0u);
  EXPECT_EQ(d.allocator_releases, 1u);
  EXPECT_EQ(d.deferred_frees, 1u);
  EXPECT_EQ(d.matched_segments, 3u);
  EXPECT_EQ(d.stats.max_reserved_bytes, 160 * kMiB);
  EXPECT_EQ(d.stats.reserved_bytes, 150 * kMiB);
}

TEST(TraceReplay, ARecordedOomIsReproduced) {
  Records r;
  r.segment(kSegA, 100 * kMiB).alloc(kSegA, 100 * kMiB);
  r.failed_cuda_malloc(200 * kMiB);
  r.block(BlockAction::kOom, 0, 200 * kMiB);
  const DeviceReplayResult d = r.replay().devices[0];
  EXPECT_TRUE(d.exact());
  EXPECT_EQ(d.recorded_ooms, 1u);
  EXPECT_EQ(d.failed_requests, 1u);
  EXPECT_EQ(d.first_failed_size, 200 * kMiB);
  EXPECT_EQ(d.stats.max_reserved_bytes, 100 * kMiB);
}

// A free requested, then other work, then completed (record_stream): the block is reused only
// once the free completed; the allocated bytes dropped at the request.
TEST(TraceReplay, AFreeIsReusableOnlyOnceItCompleted) {
  Records r;
  r.segment(kSegA, 20 * kMiB).alloc(kSegA, 8 * kMiB);
  r.block(BlockAction::kFreeRequested, kSegA, 8 * kMiB);
  // Served from the 12 MiB left, not the 8 MiB block whose free has not completed.
  r.alloc(kSegA + 8 * kMiB, 8 * kMiB);
  r.block(BlockAction::kFreeCompleted, kSegA, 8 * kMiB);
  r.alloc(kSegA, 8 * kMiB);
  const DeviceReplayResult d = r.replay().devices[0];
  EXPECT_TRUE(d.exact()) << (d.divergence ? static_cast<int>(d.divergence->kind) : -1);
  EXPECT_EQ(d.deferred_frees, 1u);
  EXPECT_EQ(d.stats.max_allocated_bytes, 16 * kMiB);
  EXPECT_EQ(d.recorded_max_allocated, 16 * kMiB);
  EXPECT_EQ(d.modelled_segments, 1u);
}

// Expandable segments: no AllocatorSettings key, but the mappings show them.
TEST(TraceReplay, MappingsShowExpandableSegments) {
  Records r;
  r.block(BlockAction::kSegmentMap, kSegA, 100 * kMiB).alloc(kSegA, 100 * kMiB);
  r.free(kSegA, 100 * kMiB);
  r.alloc(kSegA, 60 * kMiB);
  const DeviceReplayResult d = r.replay().devices[0];
  EXPECT_TRUE(d.expandable_inferred);
  EXPECT_TRUE(d.exact());
  EXPECT_EQ(d.matched_segments, 1u);
  EXPECT_EQ(d.stats.max_reserved_bytes, 100 * kMiB);
}

// Two 100 MiB tensors in segments of their own, freed, then 150 MiB: PyTorch's default takes a
// third segment (350 MiB reserved); with expandable segments the freed pages serve it.
Records fragmenting_run() {
  Records r;
  r.device(1024 * kMiB);
  r.segment(kSegA, 100 * kMiB).alloc(kSegA, 100 * kMiB);
  r.segment(kSegB, 100 * kMiB).alloc(kSegB, 100 * kMiB);
  r.free(kSegA, 100 * kMiB).free(kSegB, 100 * kMiB);
  r.segment(kSegC, 150 * kMiB).alloc(kSegC, 150 * kMiB);
  return r;
}

TEST(WhatIf, ExpandableSegmentsLowerThePredictedReserved) {
  const std::vector<uint8_t> trace = fragmenting_run().file();
  WhatIfOptions options;
  options.alloc_conf = "expandable_segments:True";
  const WhatIfResult w = predict_whatif(trace, "frag.gmt", options);
  ASSERT_EQ(w.devices.size(), 1u);
  const DevicePrediction& p = w.devices[0];
  EXPECT_TRUE(w.changed);
  EXPECT_TRUE(p.fidelity.exact());
  EXPECT_EQ(p.recorded_max_reserved, 350 * kMiB);
  EXPECT_EQ(p.fidelity.stats.max_reserved_bytes, 350 * kMiB);
  EXPECT_EQ(p.predicted_max_reserved, 200 * kMiB);
  EXPECT_EQ(p.predicted_max_allocated, 200 * kMiB);
  EXPECT_EQ(p.total_bytes, 1024 * kMiB);
  EXPECT_EQ(p.capacity, 1024 * kMiB);
  EXPECT_TRUE(p.fits);
}

TEST(WhatIf, ASmallerDeviceReleasesTheCacheOrDoesNotFit) {
  const std::vector<uint8_t> trace = fragmenting_run().file();
  WhatIfOptions options;
  // 300 MiB: the 150 MiB request fails, the two free segments go back, the retry fits.
  options.device_memory = 300 * kMiB;
  WhatIfResult w = predict_whatif(trace, "frag.gmt", options);
  EXPECT_TRUE(w.devices[0].fits);
  EXPECT_EQ(w.devices[0].predicted_max_reserved, 200 * kMiB);
  // 120 MiB: the second tensor does not fit.
  options.device_memory = 120 * kMiB;
  w = predict_whatif(trace, "frag.gmt", options);
  EXPECT_FALSE(w.devices[0].fits);
  EXPECT_EQ(w.devices[0].first_failed_size, 100 * kMiB);
  EXPECT_EQ(w.devices[0].predicted_max_reserved, 100 * kMiB);
}

// Within the verdict's margin (2 %) at the full capacity, the run is replayed once more with
// the margin taken off, as the largest batch's search judges a batch: at 350 MiB it reserves
// all 350 MiB, and at 343 MiB the 150 MiB request fails, the free segments go back and the
// retry fits (it fits with the margin to spare); at 200 MiB it reserves 200 MiB, and at 196 MiB
// the second tensor fails (too close to call).
TEST(WhatIf, WithinTheMarginItFitsOnlyIfItFitsWithTheMarginTakenOff) {
  const std::vector<uint8_t> trace = fragmenting_run().file();
  WhatIfOptions options;
  options.device_memory = 350 * kMiB;
  WhatIfResult w = predict_whatif(trace, "frag.gmt", options);
  EXPECT_EQ(w.margin_replays, 1u);
  EXPECT_TRUE(w.devices[0].fits);
  EXPECT_FALSE(w.devices[0].close);
  EXPECT_TRUE(w.devices[0].fits_with_margin);
  EXPECT_EQ(w.devices[0].predicted_max_reserved, 350 * kMiB);
  EXPECT_EQ(w.devices[0].margin_max_reserved, 200 * kMiB);

  options.device_memory = 200 * kMiB;
  w = predict_whatif(trace, "frag.gmt", options);
  EXPECT_EQ(w.margin_replays, 1u);
  EXPECT_TRUE(w.devices[0].fits);  // no request failed at 200 MiB
  EXPECT_TRUE(w.devices[0].close);
  EXPECT_FALSE(w.devices[0].fits_with_margin);
  EXPECT_EQ(w.devices[0].predicted_max_reserved, 200 * kMiB);

  // Far from the margin: no replay more.
  options.device_memory = 300 * kMiB;
  w = predict_whatif(trace, "frag.gmt", options);
  EXPECT_EQ(w.margin_replays, 0u);
  EXPECT_FALSE(w.devices[0].fits_with_margin);
}

// The events gathered in a replay's own pass (replay_trace's `also`) are those read on their
// own: a what-if replays them to the same figures, and the replay that gathered them stopped at
// its failure all the same, while the gathering read on to the trace's end.
TEST(WhatIf, EventsGatheredInAReplaysPassAreTheEventsReadAlone) {
  const std::vector<uint8_t> trace = fragmenting_run().file();
  std::optional<ReplayEventsCollector> collector;
  uint64_t expected = 0;
  ReplayOptions stopping;
  stopping.what_if = true;
  stopping.capacity[0] = 120 * kMiB;
  stopping.stop_at_failure = true;
  const TraceReplayResult stopped =
      replay_trace(trace, "frag.gmt", stopping, {}, [&](uint64_t expected_records) -> RecordTap {
        expected = expected_records;
        collector.emplace(expected_records);
        return [&](const format::Record& r) { collector->add(r); };
      });
  EXPECT_EQ(stopped.devices[0].failed_requests, 1u);
  EXPECT_EQ(stopped.devices[0].stats.max_reserved_bytes, 100 * kMiB);
  EXPECT_GE(expected, 10u);
  ASSERT_TRUE(collector.has_value());
  const ReplayEvents gathered = collector->finish(stopped.history_dropped, stopped.problems);
  const ReplayEvents alone = ReplayEvents::read(trace, "frag.gmt");
  EXPECT_EQ(gathered.block_events(), 10u);
  ReplayOptions expandable;
  expandable.what_if = true;
  expandable.alloc_conf = "expandable_segments:True";
  for (const ReplayOptions& o : {stopping, expandable}) {
    const DeviceReplayResult a = gathered.replay(o).devices.at(0);
    const DeviceReplayResult b = alone.replay(o).devices.at(0);
    EXPECT_EQ(a.stats.max_reserved_bytes, b.stats.max_reserved_bytes);
    EXPECT_EQ(a.stats.max_allocated_bytes, b.stats.max_allocated_bytes);
    EXPECT_EQ(a.requests, b.requests);
    EXPECT_EQ(a.failed_requests, b.failed_requests);
  }
  EXPECT_EQ(gathered.replay(expandable).devices.at(0).stats.max_reserved_bytes, 200 * kMiB);
}

TEST(WhatIf, WithoutAChangeThePredictionIsTheUnchangedReplay) {
  const WhatIfResult w = predict_whatif(fragmenting_run().file(), "frag.gmt", {});
  EXPECT_FALSE(w.changed);
  EXPECT_EQ(w.devices[0].predicted_max_reserved, 350 * kMiB);
  EXPECT_EQ(w.block_events, 10u);
}

// A search of many replays reads the trace once (ReplayEvents): each what-if replayed from the
// events kept gives what reading the trace again gives.
TEST(WhatIf, EventsReadOnceReplayAsTheTraceReadAgain) {
  const std::vector<uint8_t> trace = fragmenting_run().file();
  const ReplayEvents events = ReplayEvents::read(trace, "frag.gmt");
  EXPECT_EQ(events.block_events(), 10u);
  std::vector<ReplayOptions> cases(4);
  for (ReplayOptions& o : cases) o.what_if = true;
  cases[1].alloc_conf = "expandable_segments:True";
  cases[2].capacity[0] = 300 * kMiB;
  cases[3].capacity[0] = 120 * kMiB;
  cases[3].stop_at_failure = true;
  for (const ReplayOptions& o : cases) {
    const TraceReplayResult from_events = events.replay(o);
    const TraceReplayResult read_again = replay_trace(trace, "frag.gmt", o);
    ASSERT_EQ(from_events.devices.size(), 1u);
    ASSERT_EQ(read_again.devices.size(), 1u);
    const DeviceReplayResult& a = from_events.devices[0];
    const DeviceReplayResult& b = read_again.devices[0];
    EXPECT_EQ(a.total_bytes, 1024 * kMiB);
    EXPECT_EQ(a.total_bytes, b.total_bytes);
    EXPECT_EQ(a.stats.max_reserved_bytes, b.stats.max_reserved_bytes);
    EXPECT_EQ(a.stats.max_allocated_bytes, b.stats.max_allocated_bytes);
    EXPECT_EQ(a.requests, b.requests);
    EXPECT_EQ(a.failed_requests, b.failed_requests);
    EXPECT_EQ(a.first_failed_size, b.first_failed_size);
    EXPECT_EQ(from_events.block_events, read_again.block_events);
  }
  EXPECT_EQ(events.replay(cases[1]).devices[0].stats.max_reserved_bytes, 200 * kMiB);
  EXPECT_EQ(events.replay(cases[3]).devices[0].failed_requests, 1u);
  // The unchanged replay follows the recorded extents and addresses: not from the events.
  EXPECT_THROW(events.replay({}), std::logic_error);
}

// Two steps, each inside an NVTX range "train_step" and ending in an optimizer step: 100 MiB
// then 150 MiB, each freed before its step ends. The 100 MiB segment stays cached into the
// second step (250 MiB reserved); torch.cuda.empty_cache() at the end of each step, of the
// range, but not of a backward the run never ends, releases it first (150 MiB).
TEST(WhatIf, EmptyCacheAtTheEndOfEachStepReleasesTheCacheThere) {
  using format::PhaseAction;
  using format::ScopeAction;
  using format::ScopeKind;
  Records run;
  run.device(1024 * kMiB).name(7, "train_step").name(8, "AdamW");
  for (const auto& [segment, size] : {std::pair{kSegA, 100 * kMiB}, {kSegB, 150 * kMiB}}) {
    run.phase(PhaseAction::kPush, 7)
        .segment(segment, size)
        .alloc(segment, size)
        .free(segment, size);
    run.scope(ScopeKind::kOptimizer, ScopeAction::kEnter, 8);
    run.scope(ScopeKind::kOptimizer, ScopeAction::kExit).phase(PhaseAction::kPop);
  }
  const std::vector<uint8_t> trace = run.file();
  const ReplayEvents events = ReplayEvents::read(trace, "steps.gmt");
  const auto predict = [&](const std::string& at) {
    WhatIfOptions options;
    if (!at.empty()) options.empty_cache_at = parse_empty_cache_at(at);
    const WhatIfResult w = predict_whatif(trace, "steps.gmt", options);
    EXPECT_TRUE(w.devices[0].fidelity.exact()) << at;
    ReplayOptions r;
    r.what_if = true;
    r.empty_cache_at = options.empty_cache_at;
    EXPECT_EQ(events.replay(r).devices[0].stats.max_reserved_bytes,
              w.devices[0].predicted_max_reserved)
        << at;
    return w.devices[0];
  };
  EXPECT_EQ(predict("").predicted_max_reserved, 250 * kMiB);
  for (const std::string at : {"step", "train_step"}) {
    const DevicePrediction p = predict(at);
    EXPECT_EQ(p.predicted_max_reserved, 150 * kMiB) << at;
    EXPECT_EQ(p.predicted_max_allocated, 150 * kMiB) << at;
    EXPECT_EQ(p.empty_cache_added, 2u) << at;
  }
  const DevicePrediction never = predict("backward");
  EXPECT_EQ(never.predicted_max_reserved, 250 * kMiB);
  EXPECT_EQ(never.empty_cache_added, 0u);
  EXPECT_EQ(predict("eval_step").empty_cache_added, 0u);
  EXPECT_THROW(parse_empty_cache_at(""), std::invalid_argument);
}

// A training step of two modules: layer1 makes an activation A1 (10 MiB), a temporary T1 (4 MiB,
// freed inside) and its output O1 (10 MiB); layer2 makes A2 (in layer2.fc) and its output O2
// (10 MiB each);
// backward releases O2, A2, O1, A1. Recorded: 40 MiB allocated at the forward's end.
// Checkpointing layer1 releases A1 at layer1's end (30 MiB then), and recomputes layer1 before
// backward releases A1: O1 live, A1 again, T1, O1 again = 30 MiB. Checkpointing layer2 alone
// changes nothing: its own forward reaches 40 MiB before it ends.
Records checkpointed_step() {
  using format::ScopeAction;
  using format::ScopeKind;
  constexpr uint64_t kA1 = 0x7f5000000000, kT1 = 0x7f5100000000, kO1 = 0x7f5200000000;
  constexpr uint64_t kA2 = 0x7f5300000000, kO2 = 0x7f5400000000;
  Records r;
  r.device(1024 * kMiB).name(1, "Net").name(2, "layer1").name(3, "layer2").name(4, "backward");
  r.name(5, "layer2.fc");
  r.scope(ScopeKind::kModule, ScopeAction::kEnter, 1);
  r.scope(ScopeKind::kModule, ScopeAction::kEnter, 2);
  r.segment(kA1, 10 * kMiB).alloc(kA1, 10 * kMiB);
  r.segment(kT1, 20 * kMiB).alloc(kT1, 4 * kMiB).free(kT1, 4 * kMiB);
  r.segment(kO1, 10 * kMiB).alloc(kO1, 10 * kMiB);
  r.scope(ScopeKind::kModule, ScopeAction::kExit);
  r.scope(ScopeKind::kModule, ScopeAction::kEnter, 3)
      .scope(ScopeKind::kModule, ScopeAction::kEnter, 5);
  r.segment(kA2, 10 * kMiB).alloc(kA2, 10 * kMiB).scope(ScopeKind::kModule, ScopeAction::kExit);
  r.segment(kO2, 10 * kMiB).alloc(kO2, 10 * kMiB);
  r.scope(ScopeKind::kModule, ScopeAction::kExit).scope(ScopeKind::kModule, ScopeAction::kExit);
  r.scope(ScopeKind::kBackward, ScopeAction::kEnter, 4);
  r.free(kO2, 10 * kMiB).free(kA2, 10 * kMiB).free(kO1, 10 * kMiB).free(kA1, 10 * kMiB);
  r.scope(ScopeKind::kBackward, ScopeAction::kExit);
  return r;
}

TEST(WhatIf, CheckpointingAModuleReleasesItsActivationsAndRecomputesThem) {
  const std::vector<uint8_t> trace = checkpointed_step().file();
  const auto predict = [&](std::vector<std::string> modules) {
    WhatIfOptions options;
    options.checkpoint = std::move(modules);
    return predict_whatif(trace, "step.gmt", options);
  };
  const WhatIfResult none = predict_whatif(trace, "step.gmt", {});
  EXPECT_EQ(none.devices[0].recorded_max_allocated, 40 * kMiB);

  const WhatIfResult layer1 = predict({"layer1"});
  EXPECT_TRUE(layer1.changed);
  EXPECT_EQ(layer1.devices[0].predicted_max_allocated, 30 * kMiB);
  ASSERT_EQ(layer1.checkpointed.size(), 1u);
  EXPECT_EQ(layer1.checkpointed[0].forwards, 1u);
  EXPECT_EQ(layer1.checkpointed[0].blocks, 1u);  // A1: O1 is its output, T1 a temporary
  EXPECT_EQ(layer1.checkpointed[0].max_bytes, 10 * kMiB);

  const WhatIfResult layer2 = predict({"layer2"});
  EXPECT_EQ(layer2.devices[0].predicted_max_allocated, 40 * kMiB);
  EXPECT_EQ(layer2.checkpointed[0].blocks, 1u);  // A2

  // Both: 30 MiB in the forward (O1, A2, O2), and each recomputation (O1, A2, O2 again: 30 MiB;
  // then A1, T1, O1 again: 24 MiB).
  const WhatIfResult both = predict({"layer1", "layer2"});
  EXPECT_EQ(both.devices[0].predicted_max_allocated, 30 * kMiB);
  // What runs inside a module named is checkpointed with it (A2, made in layer2.fc); a name is
  // a whole module path, not a prefix of one.
  // layer2.fc alone: A2 is its output, which the next module keeps: nothing to release.
  EXPECT_THROW(predict({"layer2.fc"}), WhatIfError);
  EXPECT_THROW(predict({"layer"}), WhatIfError);
  EXPECT_THROW(predict({"layer3"}), WhatIfError);
  const WhatIfResult one_missing = predict({"layer1", "layer3"});
  EXPECT_EQ(one_missing.checkpointed[1].forwards, 0u);
  EXPECT_EQ(one_missing.devices[0].predicted_max_allocated, 30 * kMiB);
}

// Every request an activation: at a batch scale K the run asks 100K, 100K (the first freed),
// then 150K MiB. On 409 MiB, with the verdict's margin (2 %) kept free, 400.8 MiB are left: the
// two 100K segments fit up to K = 2, and the 150K request is then served after the cache is
// released: the largest scale is 2, whatever the search starts from; started right, it costs
// two replays (2 fits, one step more does not).
TEST(WhatIf, TheLargestBatchIsTheSameFromAnyGuess) {
  const ReplayEvents events = ReplayEvents::read(fragmenting_run().file(), "frag.gmt");
  BlockRoles roles;
  roles.recorded = true;
  roles.roles.assign(3, static_cast<uint8_t>(Role::kActivation));
  ReplayOptions changed;
  changed.what_if = true;
  changed.roles = &roles;
  changed.capacity[0] = 409 * kMiB;
  for (const std::optional<double> guess :
       {std::optional<double>(), std::optional(0.1), std::optional(1.5), std::optional(2.0),
        std::optional(3.0), std::optional(40.0)}) {
    const BatchSearch search = search_largest_batch(events, changed, {}, guess);
    ASSERT_TRUE(search.largest.has_value());
    EXPECT_EQ(*search.largest, 2.0) << (guess ? *guess : -1);
    EXPECT_FALSE(search.capped);
    ASSERT_TRUE(search.at_largest.has_value());
    EXPECT_EQ(search.at_largest->devices[0].failed_requests, 0u);
    EXPECT_EQ(search.at_largest->devices[0].stats.max_allocated_bytes, 400 * kMiB);
    if (guess == 2.0) {
      EXPECT_EQ(search.replays, 2u);
    }
  }
}

}  // namespace
}  // namespace gmt::analyzer::allocator
