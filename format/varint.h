// SPDX-License-Identifier: Apache-2.0
// LEB128 varints and zigzag: the trace's integer encoding. Small values are common (time deltas,
// thread ids, kinds), so they cost one byte; 64-bit addresses cost at most ten.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace gmt::format {

inline constexpr std::size_t kMaxVarintBytes = 10;

// Writes `value` at `out` and returns the number of bytes written (1..10).
inline std::size_t put_varint(uint8_t* out, uint64_t value) {
  std::size_t n = 0;
  while (value >= 0x80) {
    out[n++] = static_cast<uint8_t>(value) | 0x80;
    value >>= 7;
  }
  out[n++] = static_cast<uint8_t>(value);
  return n;
}

// Writes `count` varints at `out`, one after the other; returns the bytes written. Not inline:
// one copy serves every event record (record_encoder.h's encode_record_at), because the traced
// process encodes between stretches of the program's own work, with its instruction cache cold,
// where each line of code costs more than a few instructions do.
std::size_t put_varints(uint8_t* out, const uint64_t* values, std::size_t count);

// Reads a varint from [*pos, end). Returns false, leaving *pos unchanged, when the input ends
// before the varint does or when it is longer than any 64-bit value can need.
inline bool get_varint(const uint8_t** pos, const uint8_t* end, uint64_t* value) {
  // Most fields are one byte (small deltas, kinds, ids).
  if (*pos != end && **pos < 0x80) {
    *value = **pos;
    ++*pos;
    return true;
  }
  uint64_t result = 0;
  const uint8_t* p = *pos;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (p == end) return false;
    const uint8_t byte = *p++;
    if (shift == 63 && byte > 1) return false;  // would overflow 64 bits
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *pos = p;
      *value = result;
      return true;
    }
  }
  return false;
}

// Whether the processor has pext (BMI2) and it is fast: on AMD processors before Zen 3 it is
// microcoded, many times slower than join_groups_portable(). Set while the program loads
// (varint.cpp); false before.
extern const bool kFastPext;

// The 7-bit groups of a varint's bytes closed up into its value: `bytes` holds them in its low
// bytes, and zeros past them. In three steps: pairs into 14 bits, fours into 28, eight into 56.
inline uint64_t join_groups_portable(uint64_t bytes) {
  uint64_t x = bytes & 0x7f7f7f7f7f7f7f7full;
  x = ((x & 0x7f007f007f007f00ull) >> 1) | (x & 0x007f007f007f007full);
  x = ((x & 0x3fff00003fff0000ull) >> 2) | (x & 0x00003fff00003fffull);
  return ((x & 0x0fffffff00000000ull) >> 4) | (x & 0x000000000fffffffull);
}

#if defined(__x86_64__)
// The same in one instruction, pext. Written as such: the compiler may not assume BMI2 for the
// code around it, which runs on processors without it. Only where kFastPext says so.
inline uint64_t join_groups_pext(uint64_t bytes) {
  uint64_t value;
  asm("pextq %2, %1, %0" : "=r"(value) : "r"(bytes), "r"(0x7f7f7f7f7f7f7f7full));
  return value;
}
#endif

// Reads a varint of at most 8 bytes (values below 2^56) from `p` with one 8-byte load: `p` must
// have 8 readable bytes, whatever the varint's length. Returns its length, or 0 when it is longer
// than 8 bytes (get_varint() reads those).
inline std::size_t get_short_varint(const uint8_t* p, uint64_t* value) {
  static_assert(std::endian::native == std::endian::little, "the format is little-endian");
  uint64_t word;
  std::memcpy(&word, p, sizeof word);
  const uint64_t stops = ~word & 0x8080808080808080ull;  // bytes without a continuation bit
  if (stops == 0) return 0;
  const uint64_t bytes = word & (stops ^ (stops - 1));  // up to the first stop
#if defined(__x86_64__)
  if (kFastPext) [[likely]] {
    *value = join_groups_pext(bytes);
  } else {
    *value = join_groups_portable(bytes);
  }
#else
  *value = join_groups_portable(bytes);
#endif
  return static_cast<std::size_t>(std::countr_zero(stops) >> 3) + 1;
}

inline uint64_t zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t unzigzag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

}  // namespace gmt::format
