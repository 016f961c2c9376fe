#include "format/chunk.h"

#include <zlib.h>

#include <array>
#include <cstring>

namespace gmt::format {
namespace {

// zlib's CRC-32 (reflected 0xEDB88320), eight bytes per step. The traced process extends the
// checksum by one record (a dozen bytes) at a time, where zlib's call and set-up cost more than
// the bytes: this is the same function, several times faster at that size.
using CrcTables = std::array<std::array<uint32_t, 256>, 8>;

constexpr CrcTables make_crc_tables() {
  CrcTables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (std::size_t k = 1; k < 8; ++k) {
    for (uint32_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
  }
  return t;
}

constexpr CrcTables kCrc = make_crc_tables();

uint32_t extend_crc_small(uint32_t crc, const uint8_t* bytes, std::size_t size) {
  uint32_t c = ~crc;
  for (; size >= 8; bytes += 8, size -= 8) {
    uint64_t v;
    std::memcpy(&v, bytes, 8);  // the trace is little-endian, as are the machines it runs on
    v ^= c;
    c = kCrc[7][v & 0xff] ^ kCrc[6][(v >> 8) & 0xff] ^ kCrc[5][(v >> 16) & 0xff] ^
        kCrc[4][(v >> 24) & 0xff] ^ kCrc[3][(v >> 32) & 0xff] ^ kCrc[2][(v >> 40) & 0xff] ^
        kCrc[1][(v >> 48) & 0xff] ^ kCrc[0][v >> 56];
  }
  for (; size > 0; ++bytes, --size) c = kCrc[0][(c ^ *bytes) & 0xff] ^ (c >> 8);
  return ~c;
}

}  // namespace

uint32_t extend_crc(uint32_t crc, const uint8_t* bytes, std::size_t size) {
  // A whole chunk (the reader) goes to zlib, which is faster on long runs.
  if (size < 256) return extend_crc_small(crc, bytes, size);
  return static_cast<uint32_t>(crc32(crc, bytes, static_cast<uInt>(size)));
}

}  // namespace gmt::format
