// SPDX-License-Identifier: Apache-2.0
#include "interpose/hooks/allocations/array_bytes.h"

#include <algorithm>

#include "interpose/hooks/cuda_api.h"

namespace gmt::interpose {

uint64_t array_element_bytes(unsigned int format) {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      return 4;
    default:
      return 4;
  }
}

uint64_t array_bytes(uint64_t width, uint64_t height, uint64_t depth, unsigned int channels,
                     unsigned int format) {
  return std::max<uint64_t>(width, 1) * std::max<uint64_t>(height, 1) *
         std::max<uint64_t>(depth, 1) * std::max(channels, 1u) * array_element_bytes(format);
}

uint64_t mipmapped_array_bytes(uint64_t width, uint64_t height, uint64_t depth,
                               unsigned int channels, unsigned int format, unsigned int levels) {
  uint64_t total = 0;
  for (unsigned int level = 0; level < std::max(levels, 1u); ++level) {
    // Each level halves every dimension that exists, down to 1.
    auto halve = [level](uint64_t d) { return d == 0 ? 0 : std::max<uint64_t>(d >> level, 1); };
    total += array_bytes(halve(width), halve(height), halve(depth), channels, format);
  }
  return total;
}

}  // namespace gmt::interpose
