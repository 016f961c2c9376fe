// SPDX-License-Identifier: Apache-2.0
#include "format/size_limit.h"

#include "format/size_text.h"

namespace gmt::format {

std::optional<uint64_t> parse_max_size(std::string_view text) {
  const std::optional<uint64_t> bytes = parse_byte_size(text);
  if (!bytes || *bytes < kMinMaxSize) return std::nullopt;
  return bytes;
}

}  // namespace gmt::format
