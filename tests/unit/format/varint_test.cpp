// SPDX-License-Identifier: Apache-2.0
#include "format/varint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <vector>

namespace gmt::format {
namespace {

TEST(Varint, RoundTripsBoundaryValuesWithTheExpectedLength) {
  const std::pair<uint64_t, std::size_t> cases[] = {{0, 1},
                                                    {127, 1},
                                                    {128, 2},
                                                    {16383, 2},
                                                    {16384, 3},
                                                    {(1ull << 35) - 1, 5},
                                                    {std::numeric_limits<uint64_t>::max(), 10}};
  for (const auto& [value, length] : cases) {
    uint8_t buf[kMaxVarintBytes];
    ASSERT_EQ(put_varint(buf, value), length) << value;
    const uint8_t* pos = buf;
    uint64_t decoded = 0;
    ASSERT_TRUE(get_varint(&pos, buf + length, &decoded));
    EXPECT_EQ(decoded, value);
    EXPECT_EQ(pos, buf + length);
  }
}

TEST(Varint, RejectsInputThatEndsInsideTheVarint) {
  uint8_t buf[kMaxVarintBytes];
  const std::size_t n = put_varint(buf, 300);
  const uint8_t* pos = buf;
  uint64_t value = 7;
  EXPECT_FALSE(get_varint(&pos, buf + n - 1, &value));
  EXPECT_EQ(pos, buf);
  EXPECT_EQ(value, 7u);
}

TEST(Varint, RejectsOverlongEncodings) {
  uint8_t eleven[11];
  std::fill(std::begin(eleven), std::end(eleven), 0x80);
  eleven[10] = 0x01;
  const uint8_t* pos = eleven;
  uint64_t value = 0;
  EXPECT_FALSE(get_varint(&pos, eleven + 11, &value));
  // Ten bytes whose last carries more than the 64th bit.
  uint8_t too_big[10];
  std::fill(std::begin(too_big), std::end(too_big), 0xff);
  too_big[9] = 0x02;
  pos = too_big;
  EXPECT_FALSE(get_varint(&pos, too_big + 10, &value));
}

// The one-load decoder must agree with the byte loop on every length it accepts, whatever
// bytes follow the varint, and refuse (0) every varint longer than 8 bytes.
TEST(Varint, ShortDecoderAgreesWithTheByteLoop) {
  std::vector<uint64_t> values;
  for (unsigned bits = 0; bits <= 64; ++bits) {
    const uint64_t top = bits == 64 ? ~0ull : (1ull << bits);
    for (uint64_t delta : {0ull, 1ull, 2ull, 0x55ull, 0x7full}) {
      values.push_back(top - delta);
      values.push_back(top + delta);
    }
  }
  values.push_back(0x0123456789abcdefull);
  values.push_back(0x00fedcba98765432ull);
  for (const uint64_t value : values) {
    for (const uint8_t filler : {uint8_t{0x00}, uint8_t{0xff}, uint8_t{0x80}, uint8_t{0x7f}}) {
      uint8_t buf[kMaxVarintBytes + 8];
      std::fill(std::begin(buf), std::end(buf), filler);
      const std::size_t length = put_varint(buf, value);
      uint64_t decoded = 0;
      const std::size_t n = get_short_varint(buf, &decoded);
      if (length > 8) {
        EXPECT_EQ(n, 0u) << value;
        continue;
      }
      EXPECT_EQ(n, length) << value;
      EXPECT_EQ(decoded, value) << value << " followed by " << int{filler};
    }
  }
}

// The two ways of closing up a varint's 7-bit groups agree on every length and every bit
// (the short decoder above uses the one this processor runs fast).
TEST(Varint, PextAndPortableJoinsAgree) {
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("bmi2")) GTEST_SKIP() << "no BMI2 on this processor";
  uint64_t x = 1;
  for (int i = 0; i < 100'000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const unsigned length = 1 + static_cast<unsigned>(x >> 61);  // 1 to 8 bytes
    const uint64_t bytes = length == 8 ? x : x & ((uint64_t{1} << (8 * length)) - 1);
    ASSERT_EQ(join_groups_pext(bytes), join_groups_portable(bytes)) << std::hex << bytes;
  }
  EXPECT_EQ(join_groups_pext(0xff7f), uint64_t{0x3fff});
  EXPECT_EQ(join_groups_portable(0xff7f), uint64_t{0x3fff});
#else
  GTEST_SKIP() << "pext is an x86-64 instruction";
#endif
}

TEST(Varint, ShortDecoderRefusesEightContinuedBytes) {
  uint8_t buf[8];
  std::fill(std::begin(buf), std::end(buf), 0x80);
  uint64_t value = 7;
  EXPECT_EQ(get_short_varint(buf, &value), 0u);
  EXPECT_EQ(value, 7u);
}

TEST(Zigzag, MapsSmallMagnitudesToSmallCodes) {
  EXPECT_EQ(zigzag(0), 0u);
  EXPECT_EQ(zigzag(-1), 1u);
  EXPECT_EQ(zigzag(1), 2u);
  EXPECT_EQ(zigzag(-2), 3u);
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{12345}, std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<int64_t>::max()}) {
    EXPECT_EQ(unzigzag(zigzag(v)), v);
  }
}

}  // namespace
}  // namespace gmt::format
