// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as a trace file, through everything `gpumemtrace report`
// does before symbolizing: the header check, the format reader (chunk scan, checksums, record
// decoding, the merge by time) and the analyzer's summary (both replay passes, leak classes,
// views). Bad input must end in a summary that says what was left out, or in a TraceError;
// anything else (a crash, a sanitizer report, another exception, a hang) is a bug.
//
// The reader is read twice, a record at a time and in batches: both must agree.
//
// Speed is coverage: the summary runs on the calling thread (a reading thread per summary cost
// more than the summary itself; one input in 256 still takes the threaded pipeline), and only
// the run that reaches the decoder builds the timeline (which takes a second replay).
//
// Each input runs twice: as it is, and with every chunk's published checksum recomputed over
// the payload it claims. Without the second run almost every mutation of a chunk's records
// would be stopped by its checksum, and the decoder and the replay behind it would hardly be
// fuzzed at all.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <variant>
#include <vector>

#include "analyzer/model/input/trace_error.h"
#include "analyzer/model/summarize_trace.h"
#include "format/chunk.h"
#include "format/file_header.h"
#include "format/memory_event.h"
#include "format/record_encoder.h"
#include "format/trace_reader.h"

namespace {

// What a way of reading gave: its records' encoded bytes folded into a hash (FNV-1a), and
// their length. Kept as a hash rather than as the bytes: growing two buffers a record at a time
// cost more than the reading they check.
struct Digest {
  uint64_t hash = 14695981039346656037ull;
  uint64_t bytes = 0;

  void add(const uint8_t* data, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) hash = (hash ^ data[i]) * 1099511628211ull;
    bytes += n;
  }
  bool operator==(const Digest&) const = default;
};

// A record's fields as bytes, its thread among them (the encoding leaves it out), added to
// `out`: for comparing two ways of reading the same records. Encoded on the stack; a larger
// record (a stack, a module, or a fuzzed one) is encoded again into a growable buffer.
void append_encoded(const gmt::format::Record& record, gmt::format::CodecState& state,
                    Digest& out) {
  std::visit(
      [&](const auto& r) {
        const gmt::format::CodecState before = state;
        gmt::format::FixedBuffer<1024> frame;  // any event record; the others are few
        gmt::format::encode_record(r, state, frame);
        if (!frame.overflowed()) {
          out.add(frame.data(), frame.size());
        } else {
          state = before;
          gmt::format::GrowableBuffer large;
          gmt::format::encode_record(r, state, large);
          out.add(large.data(), large.size());
        }
        if constexpr (requires { r.thread; }) {
          out.add(reinterpret_cast<const uint8_t*>(&r.thread), sizeof r.thread);
        }
      },
      record);
}

// Reads every record one at a time and, with a second reader, in batches of up to `most`
// events: both must give the same records in the same order.
void read_all(std::span<const uint8_t> bytes, std::size_t most) {
  const gmt::format::HeaderCheck header = gmt::format::check_header(bytes);
  if (!header.ok) return;
  gmt::format::CodecState state;
  Digest one_at_a_time;
  gmt::format::TraceReader reader(bytes, header.header);
  while (const gmt::format::Record* r = reader.next_record()) {
    append_encoded(*r, state, one_at_a_time);
  }
  gmt::format::CodecState batch_state;
  Digest in_batches;
  gmt::format::TraceReader batches(bytes, header.header);
  std::vector<const gmt::format::MemoryEvent*> events(most);
  gmt::format::Record record;
  while (true) {
    const gmt::format::TraceReader::Batch batch = batches.next_batch(events);
    if (batch.events == 0 && batch.other == nullptr) break;
    for (std::size_t i = 0; i < batch.events; ++i) {
      gmt::format::to_record(*events[i], record);
      append_encoded(record, batch_state, in_batches);
    }
    if (batch.other != nullptr) append_encoded(*batch.other, batch_state, in_batches);
  }
  if (!(one_at_a_time == in_batches)) __builtin_trap();  // the two ways of reading disagree
}

void summarize(std::span<const uint8_t> bytes, bool timeline, bool threaded) {
  try {
    gmt::analyzer::SummaryOptions options;
    // The timeline is built in a second pass.
    options.timeline_resolution_ns = timeline ? 1'000'000 : 0;
    options.read_ahead = threaded;
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
  const std::size_t most = 1 + size % 70;  // batches of any size, beyond the reader's most too
  const bool threaded = size % 256 == 0;
  read_all(bytes, most);
  summarize(bytes, false, threaded);
  const gmt::format::HeaderCheck header = gmt::format::check_header(bytes);
  if (header.ok) {
    const std::vector<uint8_t> fixed = with_checksums_fixed(bytes, header.header);
    read_all(fixed, most);
    summarize(fixed, true, threaded);
  }
  return 0;
}
