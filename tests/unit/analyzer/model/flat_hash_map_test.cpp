// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/containers/flat_hash_map.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <unordered_map>

namespace gmt::analyzer {
namespace {

// A hash that sends every key to one of four groups: long probes that wrap around the end of the
// array, through groups that were full when later keys were placed past them.
struct CrowdedHash {
  std::size_t operator()(uint64_t key) const { return key % 4 + 13; }
};
struct MixedHash {
  std::size_t operator()(uint64_t key) const { return mix_hash(key); }
};

template <class Hash>
void check_against_std(uint64_t seed, int steps, uint64_t key_range) {
  FlatHashMap<uint64_t, uint64_t, Hash> map;
  std::unordered_map<uint64_t, uint64_t> expected;
  uint64_t x = seed;
  for (int step = 0; step < steps; ++step) {
    x = mix_hash(x + 1);
    const uint64_t key = x % key_range;
    auto* e = map.find(key);
    ASSERT_EQ(e != nullptr, expected.count(key) == 1) << "step " << step;
    if (e != nullptr) {
      ASSERT_EQ(e->value, expected[key]);
      if (x & 1) {
        map.erase(e);
        expected.erase(key);
      } else {
        e->value = x;
        expected[key] = x;
      }
    } else {
      map.insert(key, x);
      expected[key] = x;
    }
    ASSERT_EQ(map.size(), expected.size());
  }
  std::map<uint64_t, uint64_t> seen;
  map.for_each([&](uint64_t k, uint64_t v) { seen[k] = v; });
  const std::map<uint64_t, uint64_t> sorted(expected.begin(), expected.end());
  EXPECT_EQ(seen, sorted);
}

TEST(FlatHashMap, AgreesWithUnorderedMapThroughInsertsFindsAndErases) {
  check_against_std<MixedHash>(1, 200'000, 5'000);
}

TEST(FlatHashMap, ErasingInsideWrappedProbeRunsKeepsEveryKeyReachable) {
  check_against_std<CrowdedHash>(2, 20'000, 300);
}

TEST(FlatHashMap, FindsNothingWhenEmptyAndKeepsValuesAcrossGrowth) {
  FlatHashMap<uint64_t, uint64_t, MixedHash> map;
  EXPECT_EQ(map.find(0), nullptr);
  for (uint64_t k = 0; k < 10'000; ++k) map.insert(k << 12, k);
  for (uint64_t k = 0; k < 10'000; ++k) {
    auto* e = map.find(k << 12);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->value, k);
  }
  EXPECT_EQ(map.find(1), nullptr);
}

// A replay's steady state: as many frees as allocations, of ever new addresses. Erased slots in
// groups that were once full stay deleted; the array is rebuilt at the same size when they are
// what fills it, never grown for them, and every key stays reachable.
template <class Hash>
void churn_at_a_steady_size(uint64_t live, uint64_t steps) {
  FlatHashMap<uint64_t, uint64_t, Hash> map;
  std::unordered_map<uint64_t, uint64_t> expected;
  for (uint64_t k = 0; k < live; ++k) {
    map.insert(k * 512, k);
    expected[k * 512] = k;
  }
  const std::size_t footprint = map.footprint();
  uint64_t x = 7;
  for (uint64_t next = live; next < live + steps; ++next) {
    x = mix_hash(x + 1);
    // Erase one live key (the oldest of a few), insert a new one.
    const uint64_t victim = (next - live + x % 3) * 512;
    auto* e = map.find(victim);
    if (e == nullptr) continue;  // erased already
    ASSERT_EQ(e->value, expected[victim]);
    map.erase(e);
    expected.erase(victim);
    map.insert(next * 512, next);
    expected[next * 512] = next;
    ASSERT_EQ(map.size(), expected.size());
  }
  EXPECT_EQ(map.footprint(), footprint);
  for (const auto& [key, value] : expected) {
    const auto* e = map.find(key);
    ASSERT_NE(e, nullptr) << key;
    EXPECT_EQ(e->value, value);
  }
  std::size_t seen = 0;
  map.for_each([&](uint64_t, uint64_t) { ++seen; });
  EXPECT_EQ(seen, expected.size());
}

TEST(FlatHashMap, ChurnAtASteadySizeNeitherGrowsTheArrayNorLosesKeys) {
  churn_at_a_steady_size<MixedHash>(3000, 300'000);
  // Every key in four groups' probes: full groups, erased slots left deleted, rebuilds.
  churn_at_a_steady_size<CrowdedHash>(200, 20'000);
}

// Keys erased from groups that were full stay in the way as deleted slots until the array is
// rebuilt; when they are what fills it, it is rebuilt at the same size.
TEST(FlatHashMap, DeletedSlotsAreDroppedByARebuildAtTheSameSize) {
  FlatHashMap<uint64_t, uint64_t, CrowdedHash> map;
  for (uint64_t k = 0; k < 100; ++k) map.insert(4 * k, k);  // one probe: full groups
  const std::size_t footprint = map.footprint();
  for (uint64_t k = 0; k < 100; ++k) map.erase(map.find(4 * k));
  EXPECT_EQ(map.size(), 0u);
  // Keys of another probe: the deleted slots are not on it, and would fill the array.
  for (uint64_t k = 0; k < 60; ++k) map.insert(4 * k + 1, k);
  EXPECT_EQ(map.footprint(), footprint);
  for (uint64_t k = 0; k < 60; ++k) {
    ASSERT_NE(map.find(4 * k + 1), nullptr) << k;
    EXPECT_EQ(map.find(4 * k), nullptr) << k;
  }
}

}  // namespace
}  // namespace gmt::analyzer
