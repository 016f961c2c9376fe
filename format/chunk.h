// SPDX-License-Identifier: Apache-2.0
// After the header page, a trace is a sequence of fixed-size chunks. Each chunk belongs to one
// writer (a thread of the traced process) and holds that writer's records in order. The writer
// appends a record's bytes, then publishes the new length together with the checksum of all the
// bytes so far in one 8-byte store: a reader trusts exactly the published bytes, so a process
// killed mid-record loses only that unfinished record, and a damaged chunk is detected.
// From format 4.1 the writer also writes the number of records in the header as it leaves the
// chunk, so that a reader knows how many records a trace holds without reading every chunk
// twice.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gmt::format {

inline constexpr uint32_t kChunkMagic = 0x43544d47;  // "GMTC" in file order
inline constexpr std::size_t kChunkHeaderSize = 32;

// Field offsets within a chunk's header (little-endian, as written on x86-64 and arm64).
struct ChunkHeaderLayout {
  static constexpr std::size_t kMagic = 0;       // u32
  static constexpr std::size_t kWriter = 4;      // u32: which writer, unique within the file
  static constexpr std::size_t kSequence = 8;    // u32: the writer's chunk number, from 0
  static constexpr std::size_t kThread = 12;     // u32: the kernel thread id of the writer
  static constexpr std::size_t kPublished = 16;  // u64: payload length (low half), CRC (high)
  // u64 (format 4.1): records (high half) in the first `length` (low half) payload bytes; a
  // count is valid for the published bytes only when the two lengths agree. Zero before 4.1.
  static constexpr std::size_t kCounted = 24;
};

// The published and the count words each pack two 32-bit fields, the length in the low half.
inline uint64_t halves_word(uint32_t low, uint32_t high) {
  return static_cast<uint64_t>(high) << 32 | low;
}
inline uint32_t low_half(uint64_t word) {
  return static_cast<uint32_t>(word);
}
inline uint32_t high_half(uint64_t word) {
  return static_cast<uint32_t>(word >> 32);
}

inline uint64_t published_word(uint32_t used, uint32_t crc) {
  return halves_word(used, crc);
}
inline uint32_t published_length(uint64_t word) {
  return low_half(word);
}
inline uint32_t published_crc(uint64_t word) {
  return high_half(word);
}

// Written once, when the writer leaves the chunk (its next chunk, its thread's end, the process's
// exit). A chunk never left (its thread still running, its process killed) keeps a zero word,
// one written to after it a word with a shorter length: the reader counts such a chunk's records
// itself.
inline uint64_t counted_word(uint32_t used, uint32_t records) {
  return halves_word(used, records);
}
inline uint32_t counted_length(uint64_t word) {
  return low_half(word);
}
inline uint32_t counted_records(uint64_t word) {
  return high_half(word);
}

// The checksum of a chunk's published bytes. The traced process extends it by every record it
// writes (a dozen bytes), so its cost is part of every hook's: format 4 uses CRC-32C, which
// x86-64 processors compute with one instruction per 8 bytes; format 3 used zlib's CRC-32,
// whose table lookups took about a sixth of a hook's added time.
enum class ChunkChecksum : uint8_t {
  kCrc32,   // zlib's CRC-32 (reflected 0xEDB88320): format 3
  kCrc32c,  // CRC-32C, Castagnoli (reflected 0x82F63B78): format 4
};

// The checksum the files of a major format version use.
ChunkChecksum chunk_checksum(uint16_t major_version);

// The checksum of `size` bytes, continuing from `crc` (0 to start).
uint32_t extend_checksum(ChunkChecksum kind, uint32_t crc, const uint8_t* bytes, std::size_t size);

// CRC-32C, what this build writes: with the processor's CRC instruction where it has one.
uint32_t extend_crc32c(uint32_t crc, const uint8_t* bytes, std::size_t size);
// CRC-32C from tables, as computed where there is no such instruction.
uint32_t extend_crc32c_portable(uint32_t crc, const uint8_t* bytes, std::size_t size);
// zlib's CRC-32, for reading format 3.
uint32_t extend_crc32(uint32_t crc, const uint8_t* bytes, std::size_t size);

}  // namespace gmt::format
