#include "analyzer/flat_hash_map.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <unordered_map>

namespace gmt::analyzer {
namespace {

// A hash that sends every key to one of four slots: long probe runs that wrap around the end of
// the array, where backward-shift deletion is easiest to get wrong.
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

}  // namespace
}  // namespace gmt::analyzer
