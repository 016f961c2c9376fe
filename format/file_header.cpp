// SPDX-License-Identifier: Apache-2.0
#include "format/file_header.h"

#include <cstring>

namespace gmt::format {
namespace {

// Like PNG's: a non-ASCII first byte, CR LF and ^Z catch text-mode and line-ending mangling.
constexpr uint8_t kMagic[8] = {0x89, 'G', 'M', 'T', '\r', '\n', 0x1a, '\n'};

void put_u16le(uint8_t* out, uint16_t v) {
  out[0] = static_cast<uint8_t>(v);
  out[1] = static_cast<uint8_t>(v >> 8);
}

uint16_t get_u16le(const uint8_t* in) {
  return static_cast<uint16_t>(in[0] | (in[1] << 8));
}

uint64_t get_u64le(const uint8_t* in) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | in[i];
  return v;
}

}  // namespace

void write_header(uint8_t* out, uint32_t chunk_size, uint64_t max_size) {
  std::memcpy(out, kMagic, sizeof kMagic);
  put_u16le(out + 8, kVersionMajor);
  put_u16le(out + 10, kVersionMinor);
  if (max_size != 0) {
    for (int i = 0; i < 8; ++i)
      out[BoundedHeaderLayout::kMaxSize + i] = static_cast<uint8_t>(max_size >> (8 * i));
  }
  put_u16le(out + 12, static_cast<uint16_t>(chunk_size));
  put_u16le(out + 14, static_cast<uint16_t>(chunk_size >> 16));
}

HeaderCheck check_header(std::span<const uint8_t> bytes) {
  HeaderCheck check;
  if (bytes.empty()) {
    check.error =
        "the file is empty (the traced process may have been killed before it wrote anything)";
    return check;
  }
  if (bytes.size() < kHeaderSize) {
    check.error = "the file is " + std::to_string(bytes.size()) +
                  " bytes long, shorter than the 16-byte trace header";
    return check;
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    check.error = "not a gpumemtrace trace (the file does not start with the trace magic)";
    return check;
  }
  check.header.major = get_u16le(bytes.data() + 8);
  check.header.minor = get_u16le(bytes.data() + 10);
  if (check.header.major < kOldestReadableMajor || check.header.major > kVersionMajor) {
    check.error = "unsupported trace format version " + std::to_string(check.header.major) + "." +
                  std::to_string(check.header.minor) + " (this build reads versions " +
                  std::to_string(kOldestReadableMajor) + ".x to " + std::to_string(kVersionMajor) +
                  ".x)";
    return check;
  }
  check.header.chunk_size = static_cast<uint32_t>(get_u16le(bytes.data() + 12)) |
                            static_cast<uint32_t>(get_u16le(bytes.data() + 14)) << 16;
  const uint32_t chunk = check.header.chunk_size;
  if (chunk < kMinChunkSize || chunk > kMaxChunkSize || (chunk & (chunk - 1)) != 0) {
    check.error = "damaged trace header: chunk size " + std::to_string(chunk) +
                  " is not a power of two between 4 KiB and 16 MiB";
    return check;
  }
  if (check.header.major == 4 && check.header.minor >= 3 &&
      bytes.size() >= BoundedHeaderLayout::kDroppedRecords + 8) {
    check.header.max_size = get_u64le(bytes.data() + BoundedHeaderLayout::kMaxSize);
    check.header.valid_from = get_u64le(bytes.data() + BoundedHeaderLayout::kValidFrom);
    check.header.dropped_records = get_u64le(bytes.data() + BoundedHeaderLayout::kDroppedRecords);
  }
  if (check.header.major == 4 && check.header.minor >= 9 && bytes.size() >= kChunksEndOffset + 8)
    check.header.chunks_end = get_u64le(bytes.data() + kChunksEndOffset);
  check.ok = true;
  return check;
}

}  // namespace gmt::format
