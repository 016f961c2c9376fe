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
inline constexpr uint16_t kVersionMinor = 10;
inline constexpr uint16_t kOldestReadableMajor = 3;
inline constexpr uint32_t kMinChunkSize = 4096;
inline constexpr uint32_t kMaxChunkSize = 16u << 20;

// A bounded trace's words in the header page (4.3; zero in an unbounded one), little-endian u64s
// that the writer updates with one 8-byte store each.
struct BoundedHeaderLayout {
  static constexpr std::size_t kMaxSize = 16;  // the size limit asked for, in bytes
  // The oldest checkpoint a reader may start from: every record after its time is in the file.
  // 0 while no chunk has been reused. Stored before the first byte of a reused chunk is.
  static constexpr std::size_t kValidFrom = 24;
  static constexpr std::size_t kDroppedRecords = 32;  // records in the chunks reused so far
};

// Where the writer's chunks end (4.9), a little-endian u64 in the header page: the offset past
// the last chunk it handed out, stored (one 8-byte store) before that chunk's first record. A
// file shorter than that lost whole chunks at its end, which nothing else in it shows: a cut at
// a chunk boundary leaves every chunk before it whole. Zero before 4.9, and where the writer
// could not map its header page.
inline constexpr std::size_t kChunksEndOffset = 40;

struct FileHeader {
  uint16_t major = kVersionMajor;
  uint16_t minor = kVersionMinor;
  uint32_t chunk_size = 0;
  // Bounded traces (4.3), as the header page said when it was read; zero otherwise.
  uint64_t max_size = 0;
  uint64_t valid_from = 0;
  uint64_t dropped_records = 0;
  uint64_t chunks_end = 0;  // 4.9: where the writer's chunks end; 0 when not known
};

// Whether the chunks' headers count their records (format 4.1, chunk.h) in a way this build can
// use: a count includes records of every type, so only a file whose types this build knows
// (a minor no newer than its own) has counts that match the records it reads.
inline bool chunks_count_records(const FileHeader& header) {
  return header.major == 4 && header.minor >= 1 && header.minor <= kVersionMinor;
}

// Fills `out` (kHeaderSize bytes; kFirstChunkOffset for a bounded trace) with the header of this
// build's format version (4.10), with the limit when `max_size` is set.
void write_header(uint8_t* out, uint32_t chunk_size, uint64_t max_size = 0);

struct HeaderCheck {
  bool ok = false;
  FileHeader header;
  std::string error;  // why the bytes are not a readable trace, when !ok
};

HeaderCheck check_header(std::span<const uint8_t> file_bytes);

}  // namespace gmt::format
