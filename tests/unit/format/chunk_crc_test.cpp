// SPDX-License-Identifier: Apache-2.0
// The chunk checksums: CRC-32C (format 4), computed with the processor's instruction where there
// is one and from tables elsewhere, and zlib's CRC-32 (format 3). Each must give the catalogue's
// check value, the hardware and the tables must agree on every size and alignment, and
// extending record by record must equal checksumming the whole run at once.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "format/chunk.h"

namespace gmt::format {
namespace {

std::vector<uint8_t> random_bytes(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(n);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

// A bit at a time, straight from the definition: the reference the fast versions are held to.
uint32_t crc_bitwise(uint32_t polynomial, const uint8_t* bytes, std::size_t n) {
  uint32_t c = ~0u;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= bytes[i];
    for (int k = 0; k < 8; ++k) c = (c & 1) ? polynomial ^ (c >> 1) : c >> 1;
  }
  return ~c;
}
constexpr uint32_t kCastagnoli = 0x82F63B78u;
constexpr uint32_t kZlib = 0xEDB88320u;

TEST(ChunkCrc, CheckValuesOfTheCatalogue) {
  const uint8_t check[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  EXPECT_EQ(extend_crc32c(0, check, sizeof check), 0xE3069283u);
  EXPECT_EQ(extend_crc32c_portable(0, check, sizeof check), 0xE3069283u);
  EXPECT_EQ(extend_crc32(0, check, sizeof check), 0xCBF43926u);
  EXPECT_EQ(extend_checksum(ChunkChecksum::kCrc32c, 0, check, sizeof check), 0xE3069283u);
  EXPECT_EQ(extend_checksum(ChunkChecksum::kCrc32, 0, check, sizeof check), 0xCBF43926u);
}

TEST(ChunkCrc, FormatsThreeAndFourUseTheirOwn) {
  EXPECT_EQ(chunk_checksum(3), ChunkChecksum::kCrc32);
  EXPECT_EQ(chunk_checksum(4), ChunkChecksum::kCrc32c);
}

TEST(ChunkCrc, EveryWayAgreesWithTheDefinitionAtEverySizeAndAlignment) {
  const std::vector<uint8_t> bytes = random_bytes(700, 1);
  for (std::size_t start = 0; start < 8; ++start) {
    for (std::size_t n = 0; start + n <= bytes.size(); n += (n < 40 ? 1 : 37)) {
      const uint8_t* p = bytes.data() + start;
      const uint32_t castagnoli = crc_bitwise(kCastagnoli, p, n);
      ASSERT_EQ(extend_crc32c(0, p, n), castagnoli) << start << " " << n;
      ASSERT_EQ(extend_crc32c_portable(0, p, n), castagnoli) << start << " " << n;
      ASSERT_EQ(extend_crc32(0, p, n), crc_bitwise(kZlib, p, n)) << start << " " << n;
    }
  }
}

// A whole chunk is checksummed in three runs at once, joined (chunk.cpp): around and past every
// multiple of the runs' length, from any register, the same as the tables and the definition.
TEST(ChunkCrc, WholeChunksAgreeAcrossTheRunsTheyAreSplitInto) {
  const std::vector<uint8_t> bytes = random_bytes(70000, 4);
  std::mt19937 rng(5);
  std::vector<std::size_t> sizes = {3071, 3072, 3073, 3080, 6143, 6144, 6151, 65504, 70000 - 3};
  for (int i = 0; i < 40; ++i) sizes.push_back(rng() % (bytes.size() - 3));
  for (const std::size_t n : sizes) {
    const uint8_t* p = bytes.data() + n % 4;
    const uint32_t from = static_cast<uint32_t>(rng());
    ASSERT_EQ(extend_crc32c(from, p, n), extend_crc32c_portable(from, p, n)) << n;
    ASSERT_EQ(extend_crc32c(0, p, n), crc_bitwise(kCastagnoli, p, n)) << n;
  }
}

TEST(ChunkCrc, ExtendingRecordByRecordEqualsTheWholeRun) {
  const std::vector<uint8_t> bytes = random_bytes(4096, 2);
  std::mt19937 rng(3);
  uint32_t crc = 0;
  uint32_t portable = 0;
  uint32_t zlib = 0;
  std::size_t at = 0;
  while (at < bytes.size()) {
    const std::size_t piece = std::min<std::size_t>(1 + rng() % 40, bytes.size() - at);
    crc = extend_crc32c(crc, bytes.data() + at, piece);
    portable = extend_crc32c_portable(portable, bytes.data() + at, piece);
    zlib = extend_crc32(zlib, bytes.data() + at, piece);
    at += piece;
    ASSERT_EQ(crc, crc_bitwise(kCastagnoli, bytes.data(), at)) << at;
    ASSERT_EQ(portable, crc) << at;
    ASSERT_EQ(zlib, crc_bitwise(kZlib, bytes.data(), at)) << at;
  }
}

}  // namespace
}  // namespace gmt::format
