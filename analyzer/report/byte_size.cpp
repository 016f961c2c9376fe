// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/byte_size.h"

#include <array>
#include <cstdio>
#include <utility>

namespace gmt::analyzer {

std::string human_bytes(uint64_t bytes) {
  static constexpr std::array<const char*, 7> kUnits = {"B",   "KiB", "MiB", "GiB",
                                                        "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  std::size_t unit = 0;
  unsigned __int128 divisor = 1;
  while (bytes / divisor >= 1024 && unit + 1 < kUnits.size()) {
    divisor *= 1024;
    ++unit;
  }
  const uint64_t whole = static_cast<uint64_t>(bytes / divisor);
  const int digits = whole < 10 ? 2 : whole < 100 ? 1 : 0;
  // Rounded half up on the exact value, in integers: the page's figures (JavaScript's toFixed)
  // round the same way, where printf would round 1.125 to even ("1.12" beside "1.13").
  unsigned __int128 scale = 1;
  for (int d = 0; d < digits; ++d) scale *= 10;
  const unsigned __int128 rounded = (bytes * scale * 2 + divisor) / (2 * divisor);
  char buf[48];
  const auto integer = static_cast<unsigned long long>(rounded / scale);
  if (digits == 0) {
    std::snprintf(buf, sizeof buf, "%llu %s", integer, kUnits[unit]);
  } else {
    std::snprintf(buf, sizeof buf, "%llu.%0*llu %s", integer, digits,
                  static_cast<unsigned long long>(rounded % scale), kUnits[unit]);
  }
  return buf;
}

std::string human_duration(uint64_t ns) {
  char buf[32];
  if (ns < 1000000) {
    std::snprintf(buf, sizeof buf, "%.1f us", static_cast<double>(ns) / 1e3);
  } else if (ns < 1000000000) {
    std::snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(ns) / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(ns) / 1e9);
  }
  return buf;
}

}  // namespace gmt::analyzer
