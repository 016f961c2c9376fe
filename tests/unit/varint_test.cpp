#include "format/varint.h"

#include <gtest/gtest.h>

#include <limits>

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
