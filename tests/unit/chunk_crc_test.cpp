// The chunk checksum is zlib's CRC-32, computed by our own code for the short runs the traced
// process extends it by: both must agree on every size and however the bytes are split.
#include <gtest/gtest.h>
#include <zlib.h>

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

uint32_t zlib_crc(const std::vector<uint8_t>& bytes, std::size_t n) {
  return static_cast<uint32_t>(crc32(0, bytes.data(), static_cast<uInt>(n)));
}

TEST(ChunkCrc, EqualsZlibAtEverySize) {
  const std::vector<uint8_t> bytes = random_bytes(600, 1);
  for (std::size_t n = 0; n <= bytes.size(); ++n) {
    EXPECT_EQ(extend_crc(0, bytes.data(), n), zlib_crc(bytes, n)) << n;
  }
  // The check value of the CRC-32 catalogue.
  const uint8_t check[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  EXPECT_EQ(extend_crc(0, check, sizeof check), 0xCBF43926u);
}

TEST(ChunkCrc, ExtendingRecordByRecordEqualsTheWholeRun) {
  const std::vector<uint8_t> bytes = random_bytes(4096, 2);
  std::mt19937 rng(3);
  uint32_t crc = 0;
  std::size_t at = 0;
  while (at < bytes.size()) {
    const std::size_t piece = std::min<std::size_t>(1 + rng() % 40, bytes.size() - at);
    crc = extend_crc(crc, bytes.data() + at, piece);
    at += piece;
    ASSERT_EQ(crc, zlib_crc(bytes, at)) << at;
  }
}

}  // namespace
}  // namespace gmt::format
