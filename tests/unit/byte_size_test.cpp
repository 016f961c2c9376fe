#include "analyzer/byte_size.h"

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

}  // namespace
}  // namespace gmt::analyzer
