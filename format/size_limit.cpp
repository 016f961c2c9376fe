// SPDX-License-Identifier: Apache-2.0
#include "format/size_limit.h"

#include <array>
#include <charconv>
#include <utility>

namespace gmt::format {

std::optional<uint64_t> parse_max_size(std::string_view text) {
  uint64_t number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  static constexpr std::array<std::pair<std::string_view, uint64_t>, 14> kUnits{{
      {"", 1},
      {"B", 1},
      {"K", 1ull << 10},
      {"KiB", 1ull << 10},
      {"kB", 1000},
      {"KB", 1000},
      {"M", 1ull << 20},
      {"MiB", 1ull << 20},
      {"MB", 1000 * 1000},
      {"G", 1ull << 30},
      {"GiB", 1ull << 30},
      {"GB", 1000 * 1000 * 1000},
      {"T", 1ull << 40},
      {"TiB", 1ull << 40},
  }};
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    if (number > UINT64_MAX / scale) return std::nullopt;
    const uint64_t bytes = number * scale;
    if (bytes < kMinMaxSize) return std::nullopt;
    return bytes;
  }
  return std::nullopt;
}

}  // namespace gmt::format
