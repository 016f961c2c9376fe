// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/input/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>

namespace gmt::analyzer {

ProgressBar::ProgressBar(std::ostream* out, std::string label, uint64_t total, Clock clock)
    : out_(out), label_(std::move(label)), total_(total), clock_(std::move(clock)) {
  if (out_ != nullptr) start_ = clock_();
}

void ProgressBar::draw() {
  const auto now = clock_();
  if (now - start_ < std::chrono::seconds(1)) return;
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  drawn_ = true;
  const uint64_t done = std::min(done_, total_);
  const int percent = total_ == 0 ? 100 : static_cast<int>(done * 100 / total_);
  const int filled = percent * kWidth / 100;
  *out_ << "\r[" << std::string(static_cast<std::size_t>(filled), '#')
        << std::string(static_cast<std::size_t>(kWidth - filled), ' ') << "] " << percent << "% "
        << label_ << std::flush;
}

void ProgressBar::finish() {
  if (out_ == nullptr || !drawn_) return;
  // Blank the line: what the command prints next starts clean.
  *out_ << "\r" << std::string(label_.size() + kWidth + 8, ' ') << "\r" << std::flush;
  drawn_ = false;
}

std::ostream* progress_stream() {
  return isatty(STDERR_FILENO) ? &std::cerr : nullptr;
}

}  // namespace gmt::analyzer
