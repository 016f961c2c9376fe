// SPDX-License-Identifier: Apache-2.0
#include "format/chunk.h"

#include <zlib.h>

#include <array>
#include <cstring>

#include "format/hot_path.h"

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
// Three runs of bytes checksummed at once, then joined (a reader checks whole chunks).
//
// A CRC register r that goes on through n zero bytes becomes r times x^(8n) modulo the
// polynomial, and the register is linear in the bytes: the checksum of A B C from r equals
// that of A from r, shifted by the lengths of B and C, plus (xor) that of B from 0 shifted by
// the length of C, plus that of C from 0. A shift by a fixed length is a linear map of the
// register's 32 bits: four tables of 256, one per byte of the register.
constexpr std::size_t kStripe = 1024;  // bytes per run

// a times b modulo the polynomial, in the reflected order (bit 31 is x^0).
constexpr uint32_t multiply_mod(uint32_t a, uint32_t b, uint32_t polynomial) {
  uint32_t product = 0;
  for (int power = 0; power < 32; ++power) {
    if (a & (0x80000000u >> power)) product ^= b;
    b = (b & 1) ? (b >> 1) ^ polynomial : b >> 1;  // b times x
  }
  return product;
}

using ShiftTable = std::array<std::array<uint32_t, 256>, 4>;

constexpr ShiftTable make_shift_table(std::size_t zero_bytes, uint32_t polynomial) {
  uint32_t factor = 0x80000000u;  // x^0, then x^(8 * zero_bytes)
  for (std::size_t bit = 0; bit < 8 * zero_bytes; ++bit) {
    factor = (factor & 1) ? (factor >> 1) ^ polynomial : factor >> 1;
  }
  ShiftTable t{};
  for (std::size_t k = 0; k < 4; ++k) {
    for (uint32_t i = 0; i < 256; ++i) t[k][i] = multiply_mod(i << (8 * k), factor, polynomial);
  }
  return t;
}

constexpr ShiftTable kShiftOneStripe = make_shift_table(kStripe, 0x82F63B78u);
constexpr ShiftTable kShiftTwoStripes = make_shift_table(2 * kStripe, 0x82F63B78u);

uint32_t shift(const ShiftTable& t, uint64_t crc) {
  return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^ t[2][(crc >> 16) & 0xff] ^
         t[3][(crc >> 24) & 0xff];
}

// SSE4.2's crc32 instruction computes CRC-32C: 8 bytes in 3 cycles, with no tables to load, and
// one a cycle when three are independent.

// The register `c` (inverted) through the runs of three stripes at the start of `bytes`, which
// it moves past. Out of line (though not cold: a reader checks whole chunks through it): a
// record's few bytes never take it, and the short path's code then fills fewer lines of the
// instruction cache that the traced program keeps cold.
__attribute__((target("sse4.2"), noinline)) uint64_t crc32c_stripes(uint64_t c,
                                                                    const uint8_t** bytes,
                                                                    std::size_t* size) {
  for (; *size >= 3 * kStripe; *bytes += 3 * kStripe, *size -= 3 * kStripe) {
    const uint8_t* at = *bytes;
    uint64_t second = 0;
    uint64_t third = 0;
    for (std::size_t i = 0; i < kStripe; i += 8) {
      uint64_t v[3];
      std::memcpy(&v[0], at + i, 8);
      std::memcpy(&v[1], at + kStripe + i, 8);
      std::memcpy(&v[2], at + 2 * kStripe + i, 8);
      c = __builtin_ia32_crc32di(c, v[0]);
      second = __builtin_ia32_crc32di(second, v[1]);
      third = __builtin_ia32_crc32di(third, v[2]);
    }
    c = shift(kShiftTwoStripes, c) ^ shift(kShiftOneStripe, second) ^ third;
  }
  return c;
}

GMT_HOT_PATH __attribute__((target("sse4.2"))) uint32_t extend_crc32c_sse42(uint32_t crc,
                                                                            const uint8_t* bytes,
                                                                            std::size_t size) {
  uint64_t c = ~crc;
  if (size >= 3 * kStripe) [[unlikely]]
    c = crc32c_stripes(c, &bytes, &size);
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

GMT_HOT_PATH uint32_t extend_crc32c(uint32_t crc, const uint8_t* bytes, std::size_t size) {
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
