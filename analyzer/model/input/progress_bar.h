// SPDX-License-Identifier: Apache-2.0
// A progress bar on stderr for reading a long trace: drawn only at a terminal, and only once the
// work has taken more than a second, so that quick commands and piped output stay clean.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace gmt::analyzer {

class ProgressBar {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  // `out` null: no bar. `total` is the amount of work (records); `label` names it (the file).
  ProgressBar(std::ostream* out, std::string label, uint64_t total,
              Clock clock = &std::chrono::steady_clock::now);
  ~ProgressBar() { finish(); }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Cheap enough to call per record: the clock is read once every kStride records or so.
  void advance(uint64_t records = 1) {
    if (out_ == nullptr) return;
    const uint64_t before = done_;
    done_ += records;
    if (done_ / kStride != before / kStride) draw();
  }
  // Clears the bar if it was drawn.
  void finish();

  static constexpr uint64_t kStride = 1 << 16;
  static constexpr int kWidth = 30;

 private:
  void draw();

  std::ostream* out_;
  std::string label_;
  uint64_t total_;
  Clock clock_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_{};
  uint64_t done_ = 0;
  bool drawn_ = false;
};

// Where a command's progress bar goes: stderr when it is a terminal, else nowhere.
std::ostream* progress_stream();

}  // namespace gmt::analyzer
