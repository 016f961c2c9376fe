// SPDX-License-Identifier: Apache-2.0
#include "format/size_text.h"

#include <array>
#include <utility>

namespace gmt::format {

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  // Compared without regard to case: what a report prints ("8.04 GiB") and what people type
  // ("8g", "8gib") alike. K, M, G, T alone are binary; kB, MB, GB, TB decimal.
  static constexpr std::array<std::pair<std::string_view, uint64_t>, 14> kUnits = {{
      {"", 1},
      {"b", 1},
      {"k", 1ull << 10},
      {"kib", 1ull << 10},
      {"kb", 1000},
      {"m", 1ull << 20},
      {"mib", 1ull << 20},
      {"mb", 1000000},
      {"g", 1ull << 30},
      {"gib", 1ull << 30},
      {"gb", 1000000000},
      {"t", 1ull << 40},
      {"tib", 1ull << 40},
      {"tb", 1000000000000},
  }};
  // Exact decimal arithmetic: the number is mantissa / 10^decimals. A count of bytes must be
  // whole ("1.5" is no size); a size in a larger unit is rounded to the nearest byte, as the
  // sizes the reports print were ("8.04 GiB").
  using Wide = unsigned __int128;
  constexpr Wide kMax = ~uint64_t{0};
  Wide mantissa = 0;
  Wide divisor = 1;
  bool digits = false;
  bool point = false;
  std::size_t i = 0;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.') {
      if (point) return {};
      point = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    digits = true;
    if (mantissa > kMax || divisor > kMax) return {};
    mantissa = mantissa * 10 + static_cast<Wide>(c - '0');
    if (point) divisor *= 10;
  }
  if (!digits) return {};
  std::string_view unit = text.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  if (unit.size() > 3) return {};
  char lower[3] = {};
  for (std::size_t c = 0; c < unit.size(); ++c) {
    lower[c] = unit[c] >= 'A' && unit[c] <= 'Z' ? static_cast<char>(unit[c] - 'A' + 'a') : unit[c];
  }
  const std::string_view folded(lower, unit.size());
  for (const auto& [name, scale] : kUnits) {
    if (folded != name) continue;
    if (mantissa > kMax) return {};
    const Wide scaled = mantissa * scale;
    if (scale == 1 && scaled % divisor != 0) return {};
    const Wide bytes = (scaled + divisor / 2) / divisor;
    if (bytes > kMax) return {};
    return static_cast<uint64_t>(bytes);
  }
  return {};
}

}  // namespace gmt::format
