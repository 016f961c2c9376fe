// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/byte_size.h"
#include "analyzer/report/cuda_error_name.h"

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

// One rounding everywhere: half up on the exact value, as the page's JavaScript (toFixed) does;
// printf's round-half-to-even would print 1.125 GiB as "1.12 GiB" beside the page's "1.13 GiB".
TEST(HumanBytes, RoundsHalfUpAsThePageDoes) {
  EXPECT_EQ(human_bytes(9ull << 27), "1.13 GiB");        // 1.125
  EXPECT_EQ(human_bytes((9ull << 27) - 1), "1.12 GiB");  // just below
  EXPECT_EQ(human_bytes(1024 + 5), "1.00 KiB");          // 1.0048...
  EXPECT_EQ(human_bytes(1024 * 25 / 2 + 512 / 10), "12.5 KiB");
  EXPECT_EQ(human_bytes(205ull << 19), "103 MiB");  // 102.5
  EXPECT_EQ(human_bytes(10239), "10.00 KiB");       // 9.999: rounded up to 10
  EXPECT_EQ(human_bytes(UINT64_MAX), "16.0 EiB");
}

TEST(HumanDuration, PicksAReadableUnit) {
  EXPECT_EQ(human_duration(1500), "1.5 us");
  EXPECT_EQ(human_duration(15000000), "15.0 ms");
  EXPECT_EQ(human_duration(2500000000), "2.500 s");
}

TEST(CudaErrorName, NamesTheDriversCodes) {
  EXPECT_EQ(cuda_error_name(0), "CUDA_SUCCESS");
  EXPECT_EQ(cuda_error_name(2), "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(cuda_error_name(1), "CUDA_ERROR_INVALID_VALUE");
  EXPECT_EQ(cuda_error_name(201), "CUDA_ERROR_INVALID_CONTEXT");
  EXPECT_EQ(cuda_error_name(999), "CUDA_ERROR_UNKNOWN");
  EXPECT_EQ(cuda_error_name(12345), "error 12345");
}

}  // namespace
}  // namespace gmt::analyzer
