// libFuzzer target: arbitrary bytes as a trace file, through everything `gpumemtrace report`
// does before symbolizing: the header check, the format reader (chunk scan, checksums, record
// decoding, the merge by time) and the analyzer's summary (both replay passes, leak classes,
// views). Bad input must end in a summary that says what was left out, or in a TraceError;
// anything else (a crash, a sanitizer report, another exception, a hang) is a bug.
//
// Each input runs twice: as it is, and with every chunk's published checksum recomputed over
// the payload it claims. Without the second run almost every mutation of a chunk's records
// would be stopped by its checksum, and the decoder and the replay behind it would hardly be
// fuzzed at all.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "analyzer/trace_error.h"
#include "analyzer/trace_reader.h"
#include "format/chunk.h"
#include "format/file_header.h"
#include "format/trace_reader.h"

namespace {

void read_all(std::span<const uint8_t> bytes) {
  const gmt::format::HeaderCheck header = gmt::format::check_header(bytes);
  if (!header.ok) return;
  gmt::format::TraceReader reader(bytes, header.header);
  while (reader.next()) {
  }
}

void summarize(std::span<const uint8_t> bytes) {
  try {
    gmt::analyzer::SummaryOptions options;
    options.timeline_resolution_ns = 1'000'000;  // the timeline is built in the second pass
    gmt::analyzer::summarize_trace_bytes(bytes, "fuzz-input", options);
  } catch (const gmt::analyzer::TraceError&) {
    // Not a readable trace at all: the documented outcome.
  }
}

// The bytes with the checksum of every chunk whose published length fits made right.
std::vector<uint8_t> with_checksums_fixed(std::span<const uint8_t> bytes,
                                          const gmt::format::FileHeader& header) {
  const uint32_t chunk_size = header.chunk_size;
  const gmt::format::ChunkChecksum checksum = gmt::format::chunk_checksum(header.major);
  std::vector<uint8_t> fixed(bytes.begin(), bytes.end());
  using L = gmt::format::ChunkHeaderLayout;
  for (std::size_t off = gmt::format::kFirstChunkOffset;
       off + gmt::format::kChunkHeaderSize <= fixed.size(); off += chunk_size) {
    uint8_t* h = fixed.data() + off;
    uint64_t published;
    std::memcpy(&published, h + L::kPublished, sizeof published);
    const uint32_t length = gmt::format::published_length(published);
    if (length > chunk_size - gmt::format::kChunkHeaderSize ||
        length > fixed.size() - off - gmt::format::kChunkHeaderSize) {
      continue;
    }
    const uint32_t crc =
        gmt::format::extend_checksum(checksum, 0, h + gmt::format::kChunkHeaderSize, length);
    published = gmt::format::published_word(length, crc);
    std::memcpy(h + L::kPublished, &published, sizeof published);
  }
  return fixed;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  read_all(bytes);
  summarize(bytes);
  const gmt::format::HeaderCheck header = gmt::format::check_header(bytes);
  if (header.ok) {
    const std::vector<uint8_t> fixed = with_checksums_fixed(bytes, header.header);
    read_all(fixed);
    summarize(fixed);
  }
  return 0;
}
