// SPDX-License-Identifier: Apache-2.0
// The first bytes of every trace file: a magic that no text file has, the format version, and
// the size of the chunks the rest of the file is made of. The header owns the whole first page,
// so that every chunk starts on a page boundary and can be mapped on its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace gmt::format {

inline constexpr std::size_t kHeaderSize = 16;
inline constexpr std::size_t kFirstChunkOffset = 4096;
// What this build writes. It reads every minor of the majors from kOldestReadableMajor on:
// format 3 differs only in its chunk checksum (format/chunk.h).
inline constexpr uint16_t kVersionMajor = 4;
inline constexpr uint16_t kVersionMinor = 2;
inline constexpr uint16_t kOldestReadableMajor = 3;
inline constexpr uint32_t kMinChunkSize = 4096;
inline constexpr uint32_t kMaxChunkSize = 16u << 20;

struct FileHeader {
  uint16_t major = kVersionMajor;
  uint16_t minor = kVersionMinor;
  uint32_t chunk_size = 0;
};

// Whether the chunks' headers count their records (format 4.1, chunk.h) in a way this build can
// use: a count includes records of every type, so only a file whose types this build knows
// (a minor no newer than its own) has counts that match the records it reads.
inline bool chunks_count_records(const FileHeader& header) {
  return header.major == 4 && header.minor >= 1 && header.minor <= kVersionMinor;
}

// Fills `out` (kHeaderSize bytes) with the header of this build's format version.
void write_header(uint8_t* out, uint32_t chunk_size);

struct HeaderCheck {
  bool ok = false;
  FileHeader header;
  std::string error;  // why the bytes are not a readable trace, when !ok
};

HeaderCheck check_header(std::span<const uint8_t> file_bytes);

}  // namespace gmt::format
