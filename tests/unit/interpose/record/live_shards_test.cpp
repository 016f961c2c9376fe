// SPDX-License-Identifier: Apache-2.0
// A bounded trace's live set split in shards, one per writing thread: whatever the records and
// whichever threads write them, the shards together carry what one live set would, in the order
// a checkpoint writes it; a free finds its allocation on another thread's shard, by its hint or
// without it.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "interpose/record/live_shards.h"

namespace gmt::interpose {
namespace {

using format::Api;
using format::BlockAction;
using format::MemoryKind;

// Applies each record to one live set and to the shards, as the writer does, each record from
// a thread of its own shard `own`.
class Both {
 public:
  explicit Both(unsigned hint_bits) : shards(hint_bits) {}
  template <class R>
  void apply(R r, uint32_t own) {
    one.apply(r);
    bool written = false;
    shards.track(r, own, [&] { return written = true; });
    EXPECT_TRUE(written);
  }
  LiveSet one;
  LiveShards shards;
};

using AllocRow = std::tuple<uint32_t, uint64_t, uint64_t, uint64_t, uint32_t>;
AllocRow row(const format::AllocRecord& a) {
  return {static_cast<uint32_t>(a.kind), a.address, a.size, a.context, a.stack};
}
using BlockRow = std::tuple<uint32_t, int32_t, uint32_t, uint64_t, uint64_t, uint64_t>;
BlockRow row(const format::BlockRecord& b) {
  return {b.allocator, b.device, b.action, b.address, b.size, b.time_ns};
}
bool is_extent(const format::BlockRecord& b) {
  const auto action = static_cast<BlockAction>(b.action);
  return action == BlockAction::kSegmentAlloc || action == BlockAction::kSegmentMap;
}

void expect_same(const Both& both) {
  std::multiset<AllocRow> one_allocs;
  std::multiset<AllocRow> shard_allocs;
  both.one.for_each([&](const format::AllocRecord& a) { one_allocs.insert(row(a)); });
  both.shards.for_each_allocation(
      [&](const format::AllocRecord& a) { shard_allocs.insert(row(a)); });
  EXPECT_EQ(one_allocs, shard_allocs);

  // Extents (in no set order) before every block; the blocks in one order: by pool, highest
  // address first.
  std::multiset<BlockRow> one_extents;
  std::multiset<BlockRow> shard_extents;
  std::vector<BlockRow> one_blocks;
  std::vector<BlockRow> shard_blocks;
  both.one.blocks().for_each([&](const format::BlockRecord& b) {
    if (is_extent(b)) {
      EXPECT_TRUE(one_blocks.empty());
      one_extents.insert(row(b));
    } else {
      one_blocks.push_back(row(b));
    }
  });
  both.shards.for_each_block_record([&](const format::BlockRecord& b) {
    if (is_extent(b)) {
      EXPECT_TRUE(shard_blocks.empty());
      shard_extents.insert(row(b));
    } else {
      shard_blocks.push_back(row(b));
    }
  });
  EXPECT_EQ(one_extents, shard_extents);
  EXPECT_EQ(one_blocks, shard_blocks);

  using Vmm = std::vector<std::pair<char, uint64_t>>;
  const auto vmm = [](const LiveVmm& v) {
    Vmm out;
    v.for_each([&](const format::MapRecord& m) { out.emplace_back('m', m.address); },
               [&](uint64_t handle) { out.emplace_back('r', handle); },
               [&](uint64_t handle) { out.emplace_back('x', handle); });
    return out;
  };
  EXPECT_EQ(vmm(both.one.vmm()), vmm(both.shards.vmm()));
}

// Whether an allocation over `a` would replace one still live (what the shards, apart from one
// live set, leave as two: see the test after this one).
bool over_a_live_one(const LiveSet& live, const format::AllocRecord& a) {
  bool found = false;
  live.for_each([&](const format::AllocRecord& r) {
    found = found || live_key(r.kind, r.address) == live_key(a.kind, a.address);
  });
  return found;
}
bool over_a_live_one(const LiveSet& live, const format::BlockRecord& b) {
  bool found = false;
  live.blocks().for_each([&](const format::BlockRecord& r) {
    found = found || (r.action == b.action && r.allocator == b.allocator && r.device == b.device &&
                      r.address == b.address);
  });
  return found;
}

// With a table of hints (20 bits), and with one slot only, which every allocation overwrites: a
// free then mostly finds its allocation by looking in every shard.
class LiveShardsRandom : public ::testing::TestWithParam<unsigned> {};

TEST_P(LiveShardsRandom, CarryWhatOneLiveSetCarriesWhateverTheRecordsAndThreads) {
  std::mt19937_64 random(20261202);
  const auto pick = [&](uint64_t n) { return random() % n; };
  Both both(GetParam());
  uint64_t time = 0;
  for (int i = 0; i < 20000; ++i) {
    ++time;
    // Few distinct values, so that frees, unmaps and releases often find what they name.
    const uint64_t address = 0x7f0000000000ull + pick(64) * 0x200000ull + pick(4) * 512;
    const uint64_t handle = 0x10 + pick(16);
    const auto own = static_cast<uint32_t>(pick(LiveShards::kShards));
    switch (pick(10)) {
      case 0:
      case 1: {
        format::AllocRecord a;
        a.time_ns = time;
        const MemoryKind kinds[] = {MemoryKind::kDevice, MemoryKind::kHostPinned,
                                    MemoryKind::kVmmReservation, MemoryKind::kArray};
        a.kind = kinds[pick(4)];
        a.address = address;
        a.size = 512 * (1 + pick(8));
        a.context = 1 + pick(3);
        a.stack = static_cast<uint32_t>(i);
        if (!over_a_live_one(both.one, a)) both.apply(a, own);
        break;
      }
      case 2: {
        format::FreeRecord f;
        f.time_ns = time;
        const Api apis[] = {Api::kCudaFree, Api::kCuMemAddressFree, Api::kCuArrayDestroy,
                            Api::kCuMemRelease};
        f.api = apis[pick(4)];
        f.address = f.api == Api::kCuMemRelease ? handle : address;
        both.apply(f, own);
        break;
      }
      case 3: {
        format::AllocRecord a;
        a.time_ns = time;
        a.kind = MemoryKind::kVmmPhysical;
        a.api = Api::kCuMemCreate;
        a.address = handle;
        a.size = 2 << 20;
        a.context = 1;
        both.apply(a, own);
        format::MapRecord m;
        m.time_ns = time;
        m.address = address;
        m.size = 2 << 20;
        m.handle = handle;
        both.apply(m, own);
        break;
      }
      case 4: {
        format::UnmapRecord u;
        u.time_ns = time;
        u.address = address;
        u.size = 2 << 20;
        both.apply(u, own);
        format::RetainHandleRecord r;
        r.time_ns = time;
        r.handle = 0x10 + pick(16);
        both.apply(r, own);
        break;
      }
      case 5:
      case 6:
      case 7:
      case 8: {
        format::BlockRecord b;
        b.time_ns = time;
        b.allocator = static_cast<uint32_t>(pick(2));
        b.device = static_cast<int32_t>(pick(2));
        const BlockAction actions[] = {BlockAction::kAlloc,         BlockAction::kAlloc,
                                       BlockAction::kFreeRequested, BlockAction::kFreeCompleted,
                                       BlockAction::kSegmentAlloc,  BlockAction::kSegmentFree,
                                       BlockAction::kSegmentMap,    BlockAction::kSegmentUnmap};
        b.action = static_cast<uint32_t>(actions[pick(8)]);
        b.address = address;
        b.size = 512 * (1 + pick(4096));
        if (b.action != static_cast<uint32_t>(BlockAction::kAlloc) || !over_a_live_one(both.one, b))
          both.apply(b, own);
        break;
      }
      default: {
        format::ContextDestroyedRecord c;
        c.time_ns = time;
        c.id = 1 + pick(3);
        if (pick(20) == 0) both.apply(c, own);
        break;
      }
    }
    if (i % 1000 == 999) expect_same(both);
  }
  EXPECT_GT(both.one.size(), 0u);
  EXPECT_GT(both.one.blocks().size(), 0u);
  EXPECT_GT(both.one.vmm().size(), 0u);
}

INSTANTIATE_TEST_SUITE_P(HintBits, LiveShardsRandom, ::testing::Values(20u, 0u));

// An allocation over one still live, from another thread (the first one's free was lost): both
// are carried, oldest first, so that a reader, which keeps the newer, keeps what one live set
// would have kept. The same for a caching allocator's blocks.
TEST(LiveShards, AnAllocationOverALiveOneOfAnotherThreadIsCarriedAfterIt) {
  LiveShards shards;
  for (uint32_t own : {7u, 2u}) {
    format::AllocRecord a;
    a.time_ns = own == 7 ? 10 : 20;
    a.address = 0x1000;
    a.size = own;
    shards.track(a, own, [] { return true; });
    format::BlockRecord b;
    b.time_ns = a.time_ns;
    b.action = static_cast<uint32_t>(BlockAction::kAlloc);
    b.address = 0x1000;
    b.size = own;
    shards.track(b, own, [] { return true; });
  }
  std::vector<uint64_t> sizes;
  shards.for_each_allocation([&](const format::AllocRecord& r) { sizes.push_back(r.size); });
  EXPECT_EQ(sizes, (std::vector<uint64_t>{7, 2}));
  sizes.clear();
  shards.for_each_block_record([&](const format::BlockRecord& r) { sizes.push_back(r.size); });
  EXPECT_EQ(sizes, (std::vector<uint64_t>{7, 2}));
}

// A thread's allocation, freed on another thread, whose hint another thread's allocation
// overwrote (one slot): the free still finds it, and what it frees goes; a free of what was
// never tracked is written and changes nothing.
TEST(LiveShards, AFreeOnAnotherThreadFindsItsAllocationWhateverTheHint) {
  LiveShards shards(0);
  format::AllocRecord a;
  a.address = 0x1000;
  a.size = 64;
  shards.track(a, 3, [] { return true; });
  format::AllocRecord other = a;
  other.address = 0x2000;
  shards.track(other, 9, [] { return true; });  // the one hint now says shard 9
  format::FreeRecord f;
  f.api = Api::kCudaFree;
  f.address = 0x1000;
  bool written = false;
  shards.track(f, 12, [&] { return written = true; });
  EXPECT_TRUE(written);
  std::vector<uint64_t> live;
  shards.for_each_allocation([&](const format::AllocRecord& r) { live.push_back(r.address); });
  EXPECT_EQ(live, std::vector<uint64_t>{0x2000});

  written = false;
  shards.track(f, 12, [&] { return written = true; });  // again: nothing holds it now
  EXPECT_TRUE(written);
  // A record that could not be written is not applied.
  f.address = 0x2000;
  shards.track(f, 9, [] { return false; });
  live.clear();
  shards.for_each_allocation([&](const format::AllocRecord& r) { live.push_back(r.address); });
  EXPECT_EQ(live, std::vector<uint64_t>{0x2000});
}

}  // namespace
}  // namespace gmt::interpose
