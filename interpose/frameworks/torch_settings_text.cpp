// SPDX-License-Identifier: Apache-2.0
#include "interpose/frameworks/torch_settings_text.h"

#include <algorithm>
#include <cstdint>

namespace gmt::interpose {

std::string torch_settings_text(const format::AllocatorSettingsRecord& settings) {
  std::string out;
  if (settings.max_split_size != UINT64_MAX)
    out = "max_split_size_mb:" + std::to_string(settings.max_split_size >> 20);
  const auto& d = settings.roundup_divisions;
  // 0 and 1 both mean no division.
  if (std::all_of(d.begin(), d.end(), [](uint64_t n) { return n <= 1; })) return out;
  if (!out.empty()) out += ',';
  out += "roundup_power2_divisions:";
  if (std::all_of(d.begin(), d.end(), [&](uint64_t n) { return n == d.front(); }))
    return out + std::to_string(d.front());
  for (std::size_t i = 0; i < d.size(); ++i) out += (i == 0 ? "[" : " ") + std::to_string(d[i]);
  return out + "]";
}

}  // namespace gmt::interpose
