#include "format/chunk.h"

#include <zlib.h>

namespace gmt::format {

uint32_t extend_crc(uint32_t crc, const uint8_t* bytes, std::size_t size) {
  return static_cast<uint32_t>(crc32(crc, bytes, static_cast<uInt>(size)));
}

}  // namespace gmt::format
