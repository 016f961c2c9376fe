// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/containers/huge_page_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace gmt::analyzer {
namespace {

// Arrays of 2 MiB and more start on a 2 MiB boundary (where a huge page can back them); smaller
// ones come from the ordinary heap. Both hold and give back what is put in them.
TEST(HugePageAllocator, LargeArraysStartOnAHugePageAndAllKeepTheirContents) {
  for (const std::size_t n :
       {std::size_t{10}, std::size_t{262'143}, std::size_t{262'144}, std::size_t{1'000'000}}) {
    std::vector<uint64_t, HugePageAllocator<uint64_t>> v(n);
    const auto address = reinterpret_cast<std::uintptr_t>(v.data());
    if (n * sizeof(uint64_t) >= HugePageAllocator<uint64_t>::kHugePage) {
      EXPECT_EQ(address % HugePageAllocator<uint64_t>::kHugePage, 0u) << n;
    }
    for (std::size_t i = 0; i < n; ++i) v[i] = i * 3;
    uint64_t sum = 0;
    for (const uint64_t x : v) sum += x;
    EXPECT_EQ(sum, 3 * (n * (n - 1) / 2)) << n;
  }
}

}  // namespace
}  // namespace gmt::analyzer
