#include "format/chunk.h"

#include <zlib.h>

#include <array>
#include <cstring>

namespace gmt::format {
namespace {

// Slicing-by-8 tables of a reflected CRC-32 polynomial: eight bytes per step.
using CrcTables = std::array<std::array<uint32_t, 256>, 8>;

constexpr CrcTables make_crc_tables(uint32_t polynomial) {
  CrcTables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? polynomial ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (std::size_t k = 1; k < 8; ++k) {
    for (uint32_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
  }
  return t;
}

constexpr CrcTables kCastagnoli = make_crc_tables(0x82F63B78u);

#if defined(__x86_64__)
// SSE4.2's crc32 instruction computes CRC-32C: 8 bytes in 3 cycles, with no tables to load.
__attribute__((target("sse4.2"))) uint32_t extend_crc32c_sse42(uint32_t crc, const uint8_t* bytes,
                                                               std::size_t size) {
  uint64_t c = ~crc;
  for (; size >= 8; bytes += 8, size -= 8) {
    uint64_t v;
    std::memcpy(&v, bytes, 8);
    c = __builtin_ia32_crc32di(c, v);
  }
  auto c32 = static_cast<uint32_t>(c);
  if (size >= 4) {
    uint32_t v;
    std::memcpy(&v, bytes, 4);
    c32 = __builtin_ia32_crc32si(c32, v);
    bytes += 4;
    size -= 4;
  }
  for (; size > 0; ++bytes, --size) c32 = __builtin_ia32_crc32qi(c32, *bytes);
  return ~c32;
}

bool detect_sse42() {
  // __builtin_cpu_init first: this runs among the constructors, maybe before libgcc's own has
  // filled in what __builtin_cpu_supports reads.
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2") != 0;
}

// Set while the library loads. Read before that (a hook called from an earlier constructor), it
// is false: the tables give the same checksum, only slower.
const bool kHaveSse42 = detect_sse42();
#endif

}  // namespace

ChunkChecksum chunk_checksum(uint16_t major_version) {
  return major_version <= 3 ? ChunkChecksum::kCrc32 : ChunkChecksum::kCrc32c;
}

uint32_t extend_checksum(ChunkChecksum kind, uint32_t crc, const uint8_t* bytes, std::size_t size) {
  return kind == ChunkChecksum::kCrc32 ? extend_crc32(crc, bytes, size)
                                       : extend_crc32c(crc, bytes, size);
}

uint32_t extend_crc32c_portable(uint32_t crc, const uint8_t* bytes, std::size_t size) {
  const CrcTables& t = kCastagnoli;
  uint32_t c = ~crc;
  for (; size >= 8; bytes += 8, size -= 8) {
    uint64_t v;
    std::memcpy(&v, bytes, 8);  // the trace is little-endian, as are the machines it runs on
    v ^= c;
    c = t[7][v & 0xff] ^ t[6][(v >> 8) & 0xff] ^ t[5][(v >> 16) & 0xff] ^ t[4][(v >> 24) & 0xff] ^
        t[3][(v >> 32) & 0xff] ^ t[2][(v >> 40) & 0xff] ^ t[1][(v >> 48) & 0xff] ^ t[0][v >> 56];
  }
  for (; size > 0; ++bytes, --size) c = t[0][(c ^ *bytes) & 0xff] ^ (c >> 8);
  return ~c;
}

uint32_t extend_crc32c(uint32_t crc, const uint8_t* bytes, std::size_t size) {
#if defined(__x86_64__)
  if (kHaveSse42) return extend_crc32c_sse42(crc, bytes, size);
#endif
  return extend_crc32c_portable(crc, bytes, size);
}

uint32_t extend_crc32(uint32_t crc, const uint8_t* bytes, std::size_t size) {
  // zlib takes at most 4 GiB a call; a chunk is at most 16 MiB, but the type says otherwise.
  while (size > 0) {
    const std::size_t n = size < (std::size_t{1} << 30) ? size : (std::size_t{1} << 30);
    crc = static_cast<uint32_t>(crc32(crc, bytes, static_cast<uInt>(n)));
    bytes += n;
    size -= n;
  }
  return crc;
}

}  // namespace gmt::format
