// SPDX-License-Identifier: Apache-2.0
// The in-process parts of a bounded trace: the limit's syntax and its variable, which chunk may
// be reused when, and the live set a checkpoint carries.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "format/size_limit.h"
#include "interpose/config.h"
#include "interpose/record/chunk_ring.h"
#include "interpose/record/live_set.h"

namespace gmt::interpose {
namespace {

TEST(MaxSize, ReadsBytesAndBinaryAndDecimalUnits) {
  EXPECT_EQ(format::parse_max_size("1MiB"), 1u << 20);
  EXPECT_EQ(format::parse_max_size("1M"), 1u << 20);
  EXPECT_EQ(format::parse_max_size("64MiB"), 64u << 20);
  EXPECT_EQ(format::parse_max_size("1GiB"), 1ull << 30);
  EXPECT_EQ(format::parse_max_size("2G"), 2ull << 30);
  EXPECT_EQ(format::parse_max_size("3GB"), 3'000'000'000ull);
  EXPECT_EQ(format::parse_max_size("1TiB"), 1ull << 40);
  EXPECT_EQ(format::parse_max_size("2048KiB"), 2u << 20);
  EXPECT_EQ(format::parse_max_size("1048576"), 1u << 20);
  EXPECT_EQ(format::parse_max_size("1048576B"), 1u << 20);
  // The one size syntax (format/size_text.h): decimals and a space before the unit too.
  EXPECT_EQ(format::parse_max_size("1.5GiB"), 3ull << 29);
  EXPECT_EQ(format::parse_max_size("1 GiB"), 1ull << 30);
  EXPECT_EQ(format::parse_max_size("2TB"), 2'000'000'000'000ull);
  // Units in any case, as the reports print them and people type them.
  EXPECT_EQ(format::parse_max_size("1gib"), 1ull << 30);
  EXPECT_EQ(format::parse_max_size("8.00 MiB"), 8ull << 20);
}

TEST(MaxSize, RefusesWhatIsNotASizeOrIsBelowOneMiB) {
  for (const char* bad : {"", "GiB", "-1GiB", "1XB", "12parsecs", "1048575", "512KiB", "0.5MiB",
                          "0.9999MiB", "99999999999999999999", "20000000TiB"}) {
    EXPECT_FALSE(format::parse_max_size(bad).has_value()) << bad;
  }
}

std::vector<std::string>& warnings() {
  static std::vector<std::string> told;
  return told;
}

void collect(const std::string& message) {
  warnings().push_back(message);
}

TEST(MaxSizeVariable, SetsTheLimitOrWarnsByNameAndValueAndRecordsUnbounded) {
  warnings().clear();
  setenv("GPUMEMTRACE_MAX_SIZE", "64MiB", 1);
  EXPECT_EQ(Config::from_environment(collect).max_size, 64u << 20);
  EXPECT_TRUE(warnings().empty());
  setenv("GPUMEMTRACE_MAX_SIZE", "lots", 1);
  EXPECT_EQ(Config::from_environment(collect).max_size, 0u);
  ASSERT_EQ(warnings().size(), 1u);
  EXPECT_EQ(warnings()[0],
            "GPUMEMTRACE_MAX_SIZE='lots' is not a size of at least 1MiB (such as 1GiB, 1.5GiB, "
            "64MiB or a number of bytes); recording without a limit");
  unsetenv("GPUMEMTRACE_MAX_SIZE");
  EXPECT_EQ(Config::from_environment(collect).max_size, 0u);
}

// A chunk is reused only once a checkpoint that began after it was left is whole; in the order
// the chunks were left; and the oldest checkpoint to start from moves past the one it was left
// under.
TEST(ChunkRing, ReusesALeftChunkOnlyAfterAWholeCheckpointThatBeganLater) {
  ChunkRing ring;
  ring.left(4096, 10, 0);   // left before any checkpoint
  ring.left(69632, 20, 1);  // left while checkpoint 1 was the latest begun
  ring.left(135168, 30, 1);
  EXPECT_FALSE(ring.take(0).has_value());  // no whole checkpoint
  const auto first = ring.take(1);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->offset, 4096u);
  EXPECT_EQ(first->records, 10u);
  EXPECT_EQ(first->valid_from, 1u);
  EXPECT_FALSE(ring.take(1).has_value());  // left after checkpoint 1 began
  const auto second = ring.take(2);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->offset, 69632u);
  EXPECT_EQ(second->valid_from, 2u);
  EXPECT_EQ(ring.take(2)->offset, 135168u);
  EXPECT_FALSE(ring.take(5).has_value());  // none left
}

// The threads leave chunks to the checkpoints: a take that keeps some takes the oldest only
// when as many more behind it could be taken too.
TEST(ChunkRing, ATakeThatKeepsChunksLeavesThemReusable) {
  ChunkRing ring;
  ring.left(4096, 10, 0);
  ring.left(69632, 20, 0);
  ring.left(135168, 30, 1);
  EXPECT_EQ(ring.take(1, 1)->offset, 4096u);
  EXPECT_FALSE(ring.take(1, 1).has_value());  // the next reusable one is kept
  EXPECT_EQ(ring.take(1)->offset, 69632u);    // and taken without keeping
  EXPECT_FALSE(ring.take(2, 1).has_value());  // one left: kept
  EXPECT_EQ(ring.take(2)->offset, 135168u);   // by a checkpoint
}

TEST(LiveSet, KeepsWhatIsLiveByNameSpaceAndContext) {
  LiveSet live;
  format::AllocRecord a;
  a.address = 0x1000;
  a.size = 64;
  a.context = 1;
  a.stack = 7;
  live.apply(a);
  format::AllocRecord handle = a;
  handle.kind = format::MemoryKind::kVmmPhysical;  // the same value, as a handle
  handle.size = 2 << 20;
  live.apply(handle);
  format::AllocRecord host = a;
  host.address = 0x2000;
  host.kind = format::MemoryKind::kHostPinned;
  host.context = 2;
  live.apply(host);
  EXPECT_EQ(live.size(), 3u);

  format::FreeRecord free;
  free.api = format::Api::kCuMemRelease;
  free.address = 0x1000;
  live.apply(free);  // the handle, not the address
  uint64_t sizes = 0;
  live.for_each([&](const format::AllocRecord& r) { sizes += r.size; });
  EXPECT_EQ(sizes, 64u + 64u);

  format::ContextDestroyedRecord gone;
  gone.id = 1;
  live.apply(gone);
  ASSERT_EQ(live.size(), 1u);
  live.for_each([&](const format::AllocRecord& r) { EXPECT_EQ(r.address, 0x2000u); });
}

}  // namespace
}  // namespace gmt::interpose
