// SPDX-License-Identifier: Apache-2.0
// A bounded trace's live set split in shards: whatever the records, the shards together carry
// what one live set would, in the order a checkpoint writes it; and addresses spread over the
// shards, so that threads seldom share a lock.
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

// Applies each record to one live set and to the shards, as the writer does.
class Both {
 public:
  template <class R>
  void apply(const R& r) {
    one.apply(r);
    if (LiveShards::Shard* s = shards.shard_for(r)) {
      s->set.apply(r);
    } else {
      shards.apply_everywhere(r, 0);
    }
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

TEST(LiveShards, CarryWhatOneLiveSetCarriesWhateverTheRecords) {
  std::mt19937_64 random(20261202);
  const auto pick = [&](uint64_t n) { return random() % n; };
  Both both;
  uint64_t time = 0;
  for (int i = 0; i < 20000; ++i) {
    ++time;
    // Few distinct values, so that frees, unmaps and releases often find what they name.
    const uint64_t address = 0x7f0000000000ull + pick(64) * 0x200000ull + pick(4) * 512;
    const uint64_t handle = 0x10 + pick(16);
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
        both.apply(a);
        break;
      }
      case 2: {
        format::FreeRecord f;
        f.time_ns = time;
        const Api apis[] = {Api::kCudaFree, Api::kCuMemAddressFree, Api::kCuArrayDestroy,
                            Api::kCuMemRelease};
        f.api = apis[pick(4)];
        f.address = f.api == Api::kCuMemRelease ? handle : address;
        both.apply(f);
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
        both.apply(a);
        format::MapRecord m;
        m.time_ns = time;
        m.address = address;
        m.size = 2 << 20;
        m.handle = handle;
        both.apply(m);
        break;
      }
      case 4: {
        format::UnmapRecord u;
        u.time_ns = time;
        u.address = address;
        u.size = 2 << 20;
        both.apply(u);
        format::RetainHandleRecord r;
        r.time_ns = time;
        r.handle = 0x10 + pick(16);
        both.apply(r);
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
        both.apply(b);
        break;
      }
      default: {
        format::ContextDestroyedRecord c;
        c.time_ns = time;
        c.id = 1 + pick(3);
        if (pick(20) == 0) both.apply(c);
        break;
      }
    }
    if (i % 1000 == 999) expect_same(both);
  }
  EXPECT_GT(both.one.size(), 0u);
  EXPECT_GT(both.one.blocks().size(), 0u);
  EXPECT_GT(both.one.vmm().size(), 0u);
}

TEST(LiveShards, SpreadAddressesOverEveryShardAndKeepAFreeWithItsAllocation) {
  LiveShards shards;
  std::set<const LiveShards::Shard*> used;
  for (uint64_t i = 0; i < 256; ++i) {
    format::AllocRecord a;
    a.address = 0x7f0000000000ull + i * 512;  // 512-byte blocks side by side, as a cache's
    format::FreeRecord f;
    f.api = Api::kCudaFree;
    f.address = a.address;
    EXPECT_EQ(shards.shard_for(a), shards.shard_for(f));
    format::BlockRecord b;
    b.action = static_cast<uint32_t>(BlockAction::kAlloc);
    b.address = a.address;
    used.insert(shards.shard_for(b));
  }
  EXPECT_EQ(used.size(), LiveShards::kShards);
  format::ContextDestroyedRecord teardown;
  EXPECT_EQ(shards.shard_for(teardown), nullptr);  // every shard's
}

}  // namespace
}  // namespace gmt::interpose
