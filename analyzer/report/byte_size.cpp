// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/byte_size.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace gmt::analyzer {

std::string human_bytes(uint64_t bytes) {
  static constexpr std::array<const char*, 7> kUnits = {"B",   "KiB", "MiB", "GiB",
                                                        "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < kUnits.size()) {
    value /= 1024.0;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf,
                value < 10    ? "%.2f %s"
                : value < 100 ? "%.1f %s"
                              : "%.0f %s",
                value, kUnits[unit]);
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

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  static constexpr std::array<std::pair<std::string_view, double>, 14> kUnits = {{
      {"", 1},
      {"B", 1},
      {"K", 1024.0},
      {"KiB", 1024.0},
      {"KB", 1e3},
      {"M", 1048576.0},
      {"MiB", 1048576.0},
      {"MB", 1e6},
      {"G", 1073741824.0},
      {"GiB", 1073741824.0},
      {"GB", 1e9},
      {"T", 1099511627776.0},
      {"TiB", 1099511627776.0},
      {"TB", 1e12},
  }};
  const std::size_t digits = text.find_first_not_of("0123456789.");
  const std::string number(text.substr(0, digits));
  if (number.empty() || number.find_first_of("0123456789") == std::string::npos) return {};
  std::string_view unit = digits == std::string_view::npos ? "" : text.substr(digits);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size()) return {};
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    const double bytes = std::round(value * scale);
    if (bytes >= 18446744073709551615.0) return {};
    return static_cast<uint64_t>(bytes);
  }
  return {};
}

}  // namespace gmt::analyzer
