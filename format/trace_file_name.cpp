// SPDX-License-Identifier: Apache-2.0
#include "format/trace_file_name.h"

namespace gmt::format {

bool trace_file_name(std::string_view name) {
  const std::size_t at = name.rfind(".gmt");
  if (at == std::string_view::npos || at == 0) return false;
  const std::string_view tail = name.substr(at + 4);
  if (tail.empty()) return true;
  return tail.size() >= 2 && tail[0] == '.' &&
         tail.find_first_not_of("0123456789", 1) == std::string_view::npos;
}

}  // namespace gmt::format
