// The 16 bytes every trace file starts with: a magic that no text file has, then the version.
// A reader accepts any minor version of its major: minors only add record types (skipped by
// older readers) or append fields to a record (ignored by older readers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace gmt::format {

inline constexpr std::size_t kHeaderSize = 16;
inline constexpr uint16_t kVersionMajor = 1;
inline constexpr uint16_t kVersionMinor = 1;

struct FileHeader {
  uint16_t major = kVersionMajor;
  uint16_t minor = kVersionMinor;
};

// Fills `out` (kHeaderSize bytes) with the header of this build's format version.
void write_header(uint8_t* out);

struct HeaderCheck {
  bool ok = false;
  FileHeader header;
  std::string error;  // why the bytes are not a readable trace, when !ok
};

HeaderCheck check_header(std::span<const uint8_t> file_bytes);

}  // namespace gmt::format
