// SPDX-License-Identifier: Apache-2.0
// The table behind the recorder's high-water count and a bounded trace's live set: exact entries
// through inserts, replacements, removals (which move later entries of a probe back) and growth.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "interpose/record/live_size_table.h"

namespace gmt::interpose {
namespace {

using Entry = LiveSizeTable::Entry;

TEST(LiveSizeTable, PutReplaceAndTake) {
  LiveSizeTable table;
  Entry old;
  EXPECT_FALSE(table.put(0x1000, Entry{0, 1, 64}, &old));
  EXPECT_TRUE(table.put(0x1000, Entry{1, 2, 128}, &old));
  EXPECT_EQ(old.size, 64u);
  EXPECT_EQ(old.device, 0);
  Entry taken;
  EXPECT_TRUE(table.take(0x1000, &taken));
  EXPECT_EQ(taken.size, 128u);
  EXPECT_EQ(taken.device, 1);
  EXPECT_EQ(taken.context, 2u);
  EXPECT_FALSE(table.take(0x1000, &taken));
  EXPECT_FALSE(table.take(0x2000, &taken));
}

// Random churn against std::map: what the table holds is always exactly what it was given,
// through many growths and removals.
TEST(LiveSizeTable, MatchesAMapUnderChurn) {
  LiveSizeTable table;
  std::map<uint64_t, uint64_t> expected;
  std::mt19937_64 rng(7);
  for (int step = 0; step < 200000; ++step) {
    const uint64_t key = (1 + rng() % 5000) << 12;
    Entry e;
    if (rng() % 3 == 0) {
      const bool had = expected.erase(key) > 0;
      ASSERT_EQ(table.take(key, &e), had) << step;
    } else {
      const uint64_t size = rng() % 1000;
      const bool had = expected.count(key) > 0;
      const uint64_t before = had ? expected[key] : 0;
      ASSERT_EQ(table.put(key, Entry{0, 0, size}, &e), had) << step;
      if (had) {
        ASSERT_EQ(e.size, before);
      }
      expected[key] = size;
    }
  }
  for (const auto& [key, size] : expected) {
    Entry e;
    ASSERT_TRUE(table.take(key, &e));
    EXPECT_EQ(e.size, size);
  }
}

// A few keys in the smallest table (64 slots): long runs of neighbouring slots, runs that wrap
// past the last slot, and removals from the middle of them, each checked against std::map by
// finding every key after every step.
TEST(LiveSizeTable, RemovalsKeepEveryOtherKeyFindable) {
  LiveSizeTable table;
  std::map<uint64_t, uint64_t> expected;
  std::mt19937_64 rng(11);
  // 31 random keys: the table stays at 64 slots, at most half full, and random homes collide
  // (consecutive keys would not: a multiplicative hash spreads them evenly). Now and then one
  // key gives way to a new one, so that runs form at every slot, the last one's included.
  std::vector<uint64_t> keys;
  for (int i = 0; i < 31; ++i) keys.push_back(1 + (rng() >> 16));
  for (int step = 0; step < 50000; ++step) {
    const uint64_t key = keys[rng() % keys.size()];
    Entry e;
    if (rng() % 20 == 0) {
      ASSERT_EQ(table.take(key, nullptr), expected.erase(key) > 0) << step;
      keys[static_cast<std::size_t>(std::find(keys.begin(), keys.end(), key) - keys.begin())] =
          1 + (rng() >> 16);
    } else if (rng() % 3 == 0) {
      ASSERT_EQ(table.take(key, rng() % 2 == 0 ? &e : nullptr), expected.erase(key) > 0) << step;
    } else if (rng() % 2 == 0) {
      // A bounded trace's free: found, then taken where it was found.
      const std::size_t at = table.position(key);
      ASSERT_EQ(at != LiveSizeTable::kNowhere, expected.erase(key) > 0) << step;
      if (at != LiveSizeTable::kNowhere) table.take_at(at);
    } else {
      const bool had = expected.count(key) > 0;
      ASSERT_EQ(table.put(key, Entry{0, 0, static_cast<uint64_t>(step)}, nullptr), had) << step;
      expected[key] = static_cast<uint64_t>(step);
    }
    ASSERT_EQ(table.size(), expected.size()) << step;
    for (const uint64_t k : keys) {
      const Entry* found = table.find(k);
      const auto it = expected.find(k);
      ASSERT_EQ(found != nullptr, it != expected.end()) << step << " key " << k;
      if (found != nullptr) {
        ASSERT_EQ(found->size, it->second) << step << " key " << k;
      }
    }
  }
}

TEST(LiveSizeTable, RemoveIfDropsExactlyTheChosenEntries) {
  LiveSizeTable table;
  Entry e;
  for (uint64_t i = 1; i <= 1000; ++i)
    table.put(i << 8, Entry{0, static_cast<uint32_t>(i % 3), i}, &e);
  uint64_t dropped = 0;
  table.remove_if([&](const Entry& entry) {
    if (entry.context != 1) return false;
    dropped += entry.size;
    return true;
  });
  uint64_t expected_dropped = 0;
  for (uint64_t i = 1; i <= 1000; ++i) {
    if (i % 3 == 1) expected_dropped += i;
    EXPECT_EQ(table.take(i << 8, &e), i % 3 != 1) << i;
  }
  EXPECT_EQ(dropped, expected_dropped);
}

}  // namespace
}  // namespace gmt::interpose
