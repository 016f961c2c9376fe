// SPDX-License-Identifier: Apache-2.0
// The progress bar: silent for the first second, then a line redrawn in place, cleared at the end.
#include "analyzer/model/input/progress_bar.h"

#include <gtest/gtest.h>

#include <sstream>

namespace gmt::analyzer {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

TEST(ProgressBar, StaysSilentForTheFirstSecondThenDrawsAndClears) {
  steady_clock::time_point now{};
  std::ostringstream out;
  {
    ProgressBar bar(&out, "t.gmt", 4 * ProgressBar::kStride, [&] { return now; });
    for (uint64_t i = 0; i < ProgressBar::kStride; ++i) bar.advance();
    EXPECT_EQ(out.str(), "");  // a quarter done, but within the first second
    now += milliseconds(1500);
    for (uint64_t i = 0; i < ProgressBar::kStride; ++i) bar.advance();
    EXPECT_EQ(out.str(), "\r[###############               ] 50% t.gmt");
  }
  // Cleared when the work ends: spaces over the line, and the cursor back at its start.
  const std::string cleared = "\r" + std::string(5 + ProgressBar::kWidth + 8, ' ') + "\r";
  EXPECT_EQ(out.str(), "\r[###############               ] 50% t.gmt" + cleared);
}

TEST(ProgressBar, WithoutAStreamTheClockIsNeverRead) {
  int reads = 0;
  steady_clock::time_point now{};
  ProgressBar bar(nullptr, "t.gmt", 10, [&] {
    ++reads;
    return now += milliseconds(5000);
  });
  for (uint64_t i = 0; i < 3 * ProgressBar::kStride; ++i) bar.advance();
  bar.finish();
  EXPECT_EQ(reads, 0);
}

}  // namespace
}  // namespace gmt::analyzer
