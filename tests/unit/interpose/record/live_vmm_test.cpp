// SPDX-License-Identifier: Apache-2.0
// What a bounded trace's checkpoint carries of VMM memory: a physical allocation stays live while
// it is mapped or referenced (a release right after mapping, as NCCL does, keeps it), and the
// mappings, extra references and releases that keep it are what the checkpoint writes.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "interpose/record/live_set.h"

namespace gmt::interpose {
namespace {

using format::Api;
using format::MemoryKind;

format::AllocRecord physical(uint64_t handle, uint64_t size) {
  format::AllocRecord r;
  r.kind = MemoryKind::kVmmPhysical;
  r.api = Api::kCuMemCreate;
  r.address = handle;
  r.size = size;
  return r;
}

format::MapRecord map(uint64_t address, uint64_t size, uint64_t handle) {
  format::MapRecord r;
  r.time_ns = address;
  r.address = address;
  r.size = size;
  r.handle = handle;
  return r;
}

format::UnmapRecord unmap(uint64_t address, uint64_t size) {
  format::UnmapRecord r;
  r.address = address;
  r.size = size;
  return r;
}

format::FreeRecord release(uint64_t handle) {
  format::FreeRecord r;
  r.api = Api::kCuMemRelease;
  r.address = handle;
  return r;
}

format::RetainHandleRecord retain(uint64_t handle) {
  format::RetainHandleRecord r;
  r.handle = handle;
  return r;
}

std::vector<uint64_t> live_handles(const LiveSet& live) {
  std::vector<uint64_t> out;
  live.for_each([&](const format::AllocRecord& a) { out.push_back(a.address); });
  std::sort(out.begin(), out.end());
  return out;
}

// What the checkpoint writes of the VMM state, in its order: ("map", address), ("retain",
// handle), ("release", handle).
std::vector<std::pair<std::string, uint64_t>> carried(const LiveSet& live) {
  std::vector<std::pair<std::string, uint64_t>> out;
  live.vmm().for_each([&](const format::MapRecord& m) { out.emplace_back("map", m.address); },
                      [&](uint64_t handle) { out.emplace_back("retain", handle); },
                      [&](uint64_t handle) { out.emplace_back("release", handle); });
  EXPECT_EQ(out.size(), live.vmm().size());
  return out;
}

using Carried = std::vector<std::pair<std::string, uint64_t>>;

TEST(LiveVmm, AHandleReleasedWhileMappedLivesUntilItsLastMappingGoes) {
  LiveSet live;
  live.apply(physical(7, 4 << 20));
  live.apply(map(0x10000000, 2 << 20, 7));
  live.apply(map(0x20000000, 2 << 20, 7));
  live.apply(release(7));
  EXPECT_EQ(live_handles(live), std::vector<uint64_t>{7});
  EXPECT_EQ(carried(live), (Carried{{"map", 0x10000000}, {"map", 0x20000000}, {"release", 7}}));
  live.apply(unmap(0x10000000, 2 << 20));
  EXPECT_EQ(live_handles(live), std::vector<uint64_t>{7});
  live.apply(unmap(0x20000000, 2 << 20));
  EXPECT_TRUE(live_handles(live).empty());
  EXPECT_TRUE(carried(live).empty());
}

TEST(LiveVmm, RetainedReferencesKeepAHandleThroughAsManyReleases) {
  LiveSet live;
  live.apply(physical(9, 2 << 20));
  live.apply(retain(9));
  live.apply(retain(9));
  EXPECT_EQ(carried(live), (Carried{{"retain", 9}, {"retain", 9}}));
  live.apply(release(9));
  live.apply(release(9));
  EXPECT_EQ(live_handles(live), std::vector<uint64_t>{9});
  EXPECT_TRUE(carried(live).empty());  // one reference left: its creation's
  live.apply(release(9));
  EXPECT_TRUE(live_handles(live).empty());
}

TEST(LiveVmm, AnUnmappedHandleGoesAtItsReleaseAndOneMadeBeforeRecordingAtOnce) {
  LiveSet live;
  live.apply(physical(3, 2 << 20));
  live.apply(map(0x30000000, 2 << 20, 3));
  live.apply(unmap(0x30000000, 2 << 20));
  EXPECT_EQ(live_handles(live), std::vector<uint64_t>{3});
  live.apply(release(3));
  EXPECT_TRUE(live_handles(live).empty());
  // A mapping of a handle the trace never saw made is carried, and its unmap ends it.
  live.apply(map(0x40000000, 2 << 20, 99));
  EXPECT_EQ(carried(live), (Carried{{"map", 0x40000000}}));
  live.apply(release(99));
  live.apply(unmap(0x40000000, 2 << 20));
  EXPECT_TRUE(carried(live).empty());
}

}  // namespace
}  // namespace gmt::interpose
