// SPDX-License-Identifier: Apache-2.0
// One size syntax everywhere (format/size_text.h): what GPUMEMTRACE_MAX_SIZE, `run --max-size`
// and `check --max-peak`, `--max-leak` and `--max-role` accept.
#include "format/size_text.h"

#include <gtest/gtest.h>

namespace gmt::format {
namespace {

TEST(ParseByteSize, AcceptsBytesBinaryAndDecimalUnits) {
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  EXPECT_EQ(parse_byte_size("7B"), 7u);
  EXPECT_EQ(parse_byte_size("2K"), 2048u);
  EXPECT_EQ(parse_byte_size("2KiB"), 2048u);
  EXPECT_EQ(parse_byte_size("2kB"), 2000u);
  EXPECT_EQ(parse_byte_size("2KB"), 2000u);
  EXPECT_EQ(parse_byte_size("512MiB"), 512ull << 20);
  EXPECT_EQ(parse_byte_size("512M"), 512ull << 20);
  EXPECT_EQ(parse_byte_size("3MB"), 3000000u);
  EXPECT_EQ(parse_byte_size("10 GiB"), 10ull << 30);
  EXPECT_EQ(parse_byte_size("2GB"), 2000000000u);
  EXPECT_EQ(parse_byte_size("1TiB"), 1ull << 40);
  EXPECT_EQ(parse_byte_size("1T"), 1ull << 40);
  EXPECT_EQ(parse_byte_size("2TB"), 2000000000000u);
}

// `run --max-size 1.5GiB` was refused while `check --max-peak 1.5G` was accepted.
TEST(ParseByteSize, TakesADecimalPointWithAnyUnit) {
  EXPECT_EQ(parse_byte_size("1.5GiB"), 3ull << 29);
  EXPECT_EQ(parse_byte_size("1.5G"), 3ull << 29);
  EXPECT_EQ(parse_byte_size("1.5GB"), 1500000000u);
  EXPECT_EQ(parse_byte_size("0.5K"), 512u);
  EXPECT_EQ(parse_byte_size("2.0"), 2u);
  EXPECT_EQ(parse_byte_size(".5KiB"), 512u);
  EXPECT_EQ(parse_byte_size("1.000000001GB"), 1000000001u);
}

TEST(ParseByteSize, RejectsWhatIsNotASize) {
  for (const char* bad : {"", "MiB", "12 parsecs", "1.2.3G", "-5", "nan", ".", "1 G iB", "1gibs",
                          "1GiB ", " 1GiB", "0x10", "1e3", "+5", "1,5G"}) {
    EXPECT_EQ(parse_byte_size(bad), std::nullopt) << bad;
  }
}

// A count of bytes must be whole ("1.5" is no size); a fraction of a larger unit is rounded to
// the nearest byte, as the sizes the reports print were.
TEST(ParseByteSize, RejectsFractionsOfAByteAndRoundsLargerUnits) {
  EXPECT_EQ(parse_byte_size("1.5"), std::nullopt);
  EXPECT_EQ(parse_byte_size("1.5B"), std::nullopt);
  EXPECT_EQ(parse_byte_size("0.1K"), 102u);                   // 102.4
  EXPECT_EQ(parse_byte_size("0.3K"), 307u);                   // 307.2
  EXPECT_EQ(parse_byte_size("1.0000000005GB"), 1000000001u);  // 1000000000.5, up
  EXPECT_EQ(parse_byte_size("8.04 GiB"), 8632884265u);        // 8632884264.96
}

// What every command prints, and what people type, in any case.
TEST(ParseByteSize, TakesUnitsInAnyCase) {
  EXPECT_EQ(parse_byte_size("8g"), 8ull << 30);
  EXPECT_EQ(parse_byte_size("8gib"), 8ull << 30);
  EXPECT_EQ(parse_byte_size("8GIB"), 8ull << 30);
  EXPECT_EQ(parse_byte_size("8 mib"), 8ull << 20);
  EXPECT_EQ(parse_byte_size("3mb"), 3000000u);
  EXPECT_EQ(parse_byte_size("2Kb"), 2000u);
  EXPECT_EQ(parse_byte_size("7b"), 7u);
}

TEST(ParseByteSize, RejectsMoreThanSixtyFourBits) {
  EXPECT_EQ(parse_byte_size("18446744073709551615"), 18446744073709551615u);
  EXPECT_EQ(parse_byte_size("18446744073709551616"), std::nullopt);
  EXPECT_EQ(parse_byte_size("16777216T"), std::nullopt);
  EXPECT_EQ(parse_byte_size("16777215T"), 16777215ull << 40);
  EXPECT_EQ(parse_byte_size("99999999999999999999999999999999999999999"), std::nullopt);
}

}  // namespace
}  // namespace gmt::format
