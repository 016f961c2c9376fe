// SPDX-License-Identifier: Apache-2.0
// PyTorch's blocks rebuilt from the sizes its trace entries give (what was asked for): rounded
// to 512 bytes, split where the rest is worth a block, whole where it is not.
#include "analyzer/model/block_extents.h"

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
  EXPECT_EQ(BlockExtents::rounded(0), 512u);
  EXPECT_EQ(BlockExtents::rounded(4), 512u);
  EXPECT_EQ(BlockExtents::rounded(512), 512u);
  EXPECT_EQ(BlockExtents::rounded(513), 1024u);
  EXPECT_EQ(BlockExtents::rounded(3 * kMiB + 1000), 3 * kMiB + 1024);
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
