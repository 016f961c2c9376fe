// SPDX-License-Identifier: Apache-2.0
// The note's words for PyTorch's allocator settings: only what differs from the defaults.
#include "interpose/frameworks/torch_settings_text.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace gmt::interpose {
namespace {

format::AllocatorSettingsRecord settings(uint64_t max_split_size, std::vector<uint64_t> divisions) {
  format::AllocatorSettingsRecord r;
  r.allocator = static_cast<uint32_t>(format::BlockAllocator::kPytorch);
  r.max_split_size = max_split_size;
  r.roundup_divisions = std::move(divisions);
  return r;
}

TEST(TorchSettingsText, NamesWhatDiffersFromTheDefaults) {
  const std::vector<uint64_t> none(16, 0);
  EXPECT_EQ(torch_settings_text(settings(UINT64_MAX, none)), "");
  EXPECT_EQ(torch_settings_text(settings(UINT64_MAX, std::vector<uint64_t>(16, 1))), "");
  EXPECT_EQ(torch_settings_text(settings(32ull << 20, none)), "max_split_size_mb:32");
  EXPECT_EQ(torch_settings_text(settings(32ull << 20, std::vector<uint64_t>(16, 4))),
            "max_split_size_mb:32,roundup_power2_divisions:4");
  std::vector<uint64_t> by_size(16, 8);
  by_size[0] = 1;
  by_size[1] = 2;
  EXPECT_EQ(torch_settings_text(settings(UINT64_MAX, by_size)),
            "roundup_power2_divisions:[1 2 8 8 8 8 8 8 8 8 8 8 8 8 8 8]");
}

}  // namespace
}  // namespace gmt::interpose
