// SPDX-License-Identifier: Apache-2.0
#include "format/size_text.h"

#include <array>
#include <utility>

namespace gmt::format {

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  static constexpr std::array<std::pair<std::string_view, uint64_t>, 15> kUnits = {{
      {"", 1},
      {"B", 1},
      {"K", 1ull << 10},
      {"KiB", 1ull << 10},
      {"kB", 1000},
      {"KB", 1000},
      {"M", 1ull << 20},
      {"MiB", 1ull << 20},
      {"MB", 1000000},
      {"G", 1ull << 30},
      {"GiB", 1ull << 30},
      {"GB", 1000000000},
      {"T", 1ull << 40},
      {"TiB", 1ull << 40},
      {"TB", 1000000000000},
  }};
  // Exact decimal arithmetic: the number is mantissa / 10^decimals, and the size must come out
  // a whole number of bytes ("1.5G" does, "1.5" or "0.1K" does not).
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
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    if (mantissa > kMax) return {};
    const Wide scaled = mantissa * scale;
    if (scaled % divisor != 0) return {};
    const Wide bytes = scaled / divisor;
    if (bytes > kMax) return {};
    return static_cast<uint64_t>(bytes);
  }
  return {};
}

}  // namespace gmt::format
