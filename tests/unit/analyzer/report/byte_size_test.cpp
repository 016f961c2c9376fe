// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/byte_size.h"

#include <gtest/gtest.h>

namespace gmt::analyzer {
namespace {

TEST(HumanBytes, UsesBinaryUnitsWithThreeSignificantDigits) {
  EXPECT_EQ(human_bytes(0), "0 B");
  EXPECT_EQ(human_bytes(1023), "1023 B");
  EXPECT_EQ(human_bytes(1024), "1.00 KiB");
  EXPECT_EQ(human_bytes(14680064), "14.0 MiB");
  EXPECT_EQ(human_bytes(3ull << 29), "1.50 GiB");
  EXPECT_EQ(human_bytes(500ull << 30), "500 GiB");
}

TEST(HumanDuration, PicksAReadableUnit) {
  EXPECT_EQ(human_duration(1500), "1.5 us");
  EXPECT_EQ(human_duration(15000000), "15.0 ms");
  EXPECT_EQ(human_duration(2500000000), "2.500 s");
}

TEST(ParseByteSize, AcceptsBytesBinaryAndDecimalUnits) {
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  EXPECT_EQ(parse_byte_size("512MiB"), 512ull << 20);
  EXPECT_EQ(parse_byte_size("10 GiB"), 10ull << 30);
  EXPECT_EQ(parse_byte_size("1.5G"), 3ull << 29);
  EXPECT_EQ(parse_byte_size("2GB"), 2000000000u);
  EXPECT_EQ(parse_byte_size("7B"), 7u);
}

TEST(ParseByteSize, RejectsWhatIsNotASize) {
  EXPECT_EQ(parse_byte_size(""), std::nullopt);
  EXPECT_EQ(parse_byte_size("MiB"), std::nullopt);
  EXPECT_EQ(parse_byte_size("12 parsecs"), std::nullopt);
  EXPECT_EQ(parse_byte_size("1.2.3G"), std::nullopt);
  EXPECT_EQ(parse_byte_size("-5"), std::nullopt);
}

}  // namespace
}  // namespace gmt::analyzer
