// SPDX-License-Identifier: Apache-2.0
// PyTorch's blocks rebuilt from the sizes its trace entries give (what was asked for): rounded
// to 512 bytes, split where the rest is worth a block, whole where it is not.
#include "analyzer/model/blocks/block_extents.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace gmt::analyzer {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kBase = 0x7f0000000000;

struct Extents {
  BlockExtents model;
  std::vector<std::pair<uint64_t, uint64_t>> resized;
  uint64_t allocate(uint64_t address, uint64_t requested) {
    return model.allocate(address, requested,
                          [&](uint64_t a, uint64_t size) { resized.emplace_back(a, size); });
  }
};

TEST(BlockExtents, RequestsRoundUpTo512Bytes) {
  const BlockExtents model;
  EXPECT_EQ(model.rounded(0), 512u);
  EXPECT_EQ(model.rounded(4), 512u);
  EXPECT_EQ(model.rounded(512), 512u);
  EXPECT_EQ(model.rounded(513), 1024u);
  EXPECT_EQ(model.rounded(3 * kMiB + 1000), 3 * kMiB + 1024);
}

TEST(BlockExtents, TheSmallPoolSplitsOffAnyRestOf512Bytes) {
  Extents e;
  e.model.add_segment(kBase, 2 * kMiB);
  EXPECT_EQ(e.allocate(kBase, 4), 512u);
  EXPECT_EQ(e.allocate(kBase + 512, 1000), 1024u);
  // The last 512 bytes of the segment: exactly the block.
  EXPECT_EQ(e.allocate(kBase + 2 * kMiB - 512, 100), 512u);
  EXPECT_TRUE(e.resized.empty());
}

TEST(BlockExtents, TheLargePoolKeepsARestOfAtMost1MiBInTheBlock) {
  Extents e;
  e.model.add_segment(kBase, 20 * kMiB);
  // 16 MiB left over: split off.
  EXPECT_EQ(e.allocate(kBase, 4 * kMiB), 4 * kMiB);
  // 4.5 MiB asked for in the 16 MiB left, 11.5 MiB over: split off.
  EXPECT_EQ(e.allocate(kBase + 4 * kMiB, 4 * kMiB + 512 * 1024), 4 * kMiB + 512 * 1024);
  // 11.5 MiB left; 11 MiB asked for leaves 0.5 MiB: the whole free block.
  EXPECT_EQ(e.allocate(kBase + 8 * kMiB + 512 * 1024, 11 * kMiB), 11 * kMiB + 512 * 1024);
  // Exactly 1 MiB over is not split either; more than 1 MiB is.
  Extents f;
  f.model.add_segment(kBase, 20 * kMiB);
  EXPECT_EQ(f.allocate(kBase, 19 * kMiB), 20 * kMiB);
  Extents g;
  g.model.add_segment(kBase, 20 * kMiB);
  EXPECT_EQ(g.allocate(kBase, 19 * kMiB - 512), 19 * kMiB - 512);
}

TEST(BlockExtents, AFreeBlockRunsToTheNextBlockInUseUntilItsFreeCompletes) {
  Extents e;
  e.model.add_segment(kBase, 20 * kMiB);
  EXPECT_EQ(e.allocate(kBase, 4 * kMiB), 4 * kMiB);
  EXPECT_EQ(e.allocate(kBase + 4 * kMiB, 8 * kMiB), 8 * kMiB);
  EXPECT_EQ(e.allocate(kBase + 12 * kMiB, 8 * kMiB), 8 * kMiB);
  // The first freed: 4 MiB between the segment's start and the next block; 3.5 MiB asked for
  // there takes all of it.
  e.model.release(kBase);
  EXPECT_EQ(e.allocate(kBase, 3 * kMiB + 512 * 1024), 4 * kMiB);
  // The middle one freed (and merged): 8 MiB up to the third; 2 MiB asked for is split off.
  e.model.release(kBase + 4 * kMiB);
  EXPECT_EQ(e.allocate(kBase + 4 * kMiB, 2 * kMiB), 2 * kMiB);
  // The segment given back: a block outside any segment is its rounded request.
  e.model.remove_segment(kBase);
  EXPECT_EQ(e.allocate(kBase + 30 * kMiB, 1000), 1024u);
}

TEST(BlockExtents, ExpandableSegmentsSplitAnyRestWithinTheMappedPages) {
  Extents e;
  e.model.map(kBase, 2 * kMiB);
  e.model.map(kBase + 2 * kMiB, 2 * kMiB);  // adjacent: one run of 4 MiB
  EXPECT_EQ(e.allocate(kBase, 3 * kMiB + 1000), 3 * kMiB + 1024);
  // What is left runs to the end of the mapped pages.
  EXPECT_EQ(e.allocate(kBase + 3 * kMiB + 1024, kMiB - 1024), kMiB - 1024);
  // Both freed and the upper half unmapped: 1.5 MiB asked for in the 2 MiB still mapped leaves
  // 0.5 MiB, split off (a large pool's block would keep it).
  e.model.release(kBase);
  e.model.release(kBase + 3 * kMiB + 1024);
  e.model.unmap(kBase + 2 * kMiB, 2 * kMiB);
  EXPECT_EQ(e.allocate(kBase, kMiB + 512 * 1024), kMiB + 512 * 1024);
  // Unmapped pages hold no block: a block there is its rounded request.
  EXPECT_EQ(e.allocate(kBase + 2 * kMiB + 4096, 100), 512u);
}

BlockExtents::Settings settings(uint64_t max_split_size,
                                std::vector<std::pair<std::size_t, uint64_t>> divisions) {
  BlockExtents::Settings s;
  s.max_split_size = max_split_size;
  for (const auto& [interval, n] : divisions) s.divisions[interval] = n;
  return s;
}

// roundup_power2_divisions: a request above 512 bytes x divisions goes up to the next division
// of its power-of-two interval, by the divisions of its own interval (by size: below 2 MiB,
// [2, 4) MiB, [4, 8) MiB, ...).
TEST(BlockExtents, RoundupPower2DivisionsRoundARequestToTheNextDivisionOfItsInterval) {
  BlockExtents model;
  model.set(settings(UINT64_MAX, {{0, 8}, {2, 4}, {15, 2}}));
  // [4, 8) MiB in 4: steps of 1 MiB.
  EXPECT_EQ(model.rounded(4 * kMiB + 1), 5 * kMiB);
  EXPECT_EQ(model.rounded(6 * kMiB), 6 * kMiB);
  EXPECT_EQ(model.rounded(7 * kMiB + 1), 8 * kMiB);
  EXPECT_EQ(model.rounded(4 * kMiB), 4 * kMiB);  // a power of two stays
  // Below 2 MiB in 8: [512, 1024) KiB in steps of 64 KiB.
  EXPECT_EQ(model.rounded(600 * 1024 + 1), 640 * 1024u);
  // ... but only above 512 bytes x 8: smaller requests round to 512 bytes.
  EXPECT_EQ(model.rounded(4000), 4096u);
  EXPECT_EQ(model.rounded(3000), 3072u);
  // [2, 4) MiB has no divisions: 512 bytes.
  EXPECT_EQ(model.rounded(3 * kMiB + 1000), 3 * kMiB + 1024);
  // The last interval holds every size from 32 GiB on.
  EXPECT_EQ(model.rounded((96ull << 30) + 1), 128ull << 30);
  // The default settings divide nothing.
  EXPECT_EQ(BlockExtents{}.rounded(4 * kMiB + 1), 4 * kMiB + 512);
}

// A block takes its rounded request from the start of its free block, and the rest is split off
// as without the setting.
TEST(BlockExtents, ABlockOfADividedRequestIsItsDivision) {
  Extents e;
  e.model.set(settings(UINT64_MAX, {{2, 4}}));
  e.model.add_segment(kBase, 20 * kMiB);
  EXPECT_EQ(e.allocate(kBase, 4 * kMiB + 1), 5 * kMiB);
  EXPECT_EQ(e.allocate(kBase + 5 * kMiB, 7 * kMiB + 1), 8 * kMiB);
  // 7 MiB left, 6 MiB + 1 byte asked for: 7 MiB, with nothing worth splitting off.
  EXPECT_EQ(e.allocate(kBase + 13 * kMiB, 6 * kMiB + 1), 7 * kMiB);
  EXPECT_TRUE(e.resized.empty());
}

// max_split_size: a large-pool block of at least that many bytes (rounded) is never split; below
// it, the rest over 1 MiB is, as without the setting. The small pool and expandable segments
// split as before.
TEST(BlockExtents, ABlockOfMaxSplitSizeOrMoreTakesItsWholeFreeBlock) {
  Extents e;
  e.model.set(settings(64 * kMiB, {}));
  e.model.add_segment(kBase, 100 * kMiB);
  EXPECT_EQ(e.allocate(kBase, 64 * kMiB), 100 * kMiB);
  Extents f;
  f.model.set(settings(64 * kMiB, {}));
  f.model.add_segment(kBase, 100 * kMiB);
  EXPECT_EQ(f.allocate(kBase, 64 * kMiB - 512), 64 * kMiB - 512);
  EXPECT_EQ(f.allocate(kBase + 64 * kMiB - 512, 2 * kMiB), 2 * kMiB);
  Extents g;
  g.model.set(settings(kMiB / 2, {}));  // below the small pool's largest request
  g.model.add_segment(kBase, 2 * kMiB);
  EXPECT_EQ(g.allocate(kBase, 600 * 1024), 600 * 1024u);
  Extents h;
  h.model.set(settings(64 * kMiB, {}));
  h.model.map(kBase, 100 * kMiB);
  EXPECT_EQ(h.allocate(kBase, 64 * kMiB), 64 * kMiB);
  // Set after a block was handed out: the block keeps its extent; the next one follows the
  // settings (a later block inside its extent still cuts it).
  Extents k;
  k.model.add_segment(kBase, 100 * kMiB);
  EXPECT_EQ(k.allocate(kBase, 64 * kMiB), 64 * kMiB);
  k.model.set(settings(64 * kMiB, {}));
  EXPECT_EQ(k.allocate(kBase + 64 * kMiB, 30 * kMiB), 30 * kMiB);
  EXPECT_EQ(k.allocate(kBase + 94 * kMiB, 2 * kMiB), 2 * kMiB);
  EXPECT_TRUE(k.resized.empty());
}

// A bounded trace's carried blocks from a writer that gave them in any order: a block that lands
// inside an earlier block's extent cuts it, and the earlier block is told.
TEST(BlockExtents, ABlockInsideAnEarlierExtentCutsIt) {
  Extents e;
  e.model.add_segment(kBase, 20 * kMiB);
  EXPECT_EQ(e.allocate(kBase + 8 * kMiB, 11 * kMiB), 12 * kMiB);  // to the segment's end
  EXPECT_EQ(e.allocate(kBase + 19 * kMiB + 512 * 1024, 512 * 1024), 512 * 1024u);
  // 11.5 MiB from its start to the new block: 0.5 MiB over its request, not split.
  ASSERT_EQ(e.resized.size(), 1u);
  EXPECT_EQ(e.resized[0],
            (std::pair<uint64_t, uint64_t>{kBase + 8 * kMiB, 11 * kMiB + 512 * 1024}));
}

}  // namespace
}  // namespace gmt::analyzer
