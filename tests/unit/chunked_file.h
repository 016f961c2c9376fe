// SPDX-License-Identifier: Apache-2.0
// Builds whole trace files (header page and chunks) in memory, laid out as the preload library
// lays them out, for tests of the reader.
#pragma once

#include <cstdint>
#include <cstring>
#include <variant>
#include <vector>

#include "format/chunk.h"
#include "format/file_header.h"
#include "format/record_encoder.h"
#include "format/records.h"

namespace gmt::test {

class ChunkedFile {
 public:
  // `major`, `minor`: the format version the header names, whose checksum the chunks get
  // (format 3's files are still read), and whose chunk headers count their records (4.1).
  explicit ChunkedFile(uint32_t chunk_size = 4096, uint16_t major = format::kVersionMajor,
                       uint16_t minor = format::kVersionMinor)
      : chunk_size_(chunk_size),
        checksum_(format::chunk_checksum(major)),
        counted_(format::chunks_count_records({major, minor, chunk_size})) {
    bytes_.resize(format::kFirstChunkOffset);
    format::write_header(bytes_.data(), chunk_size);
    put<uint16_t>(bytes_.data() + 8, major);
    put<uint16_t>(bytes_.data() + 10, minor);
  }

  // Appends one chunk holding `records`, published as a writer would; returns its offset.
  template <class... R>
  uint64_t add_chunk(uint32_t writer, uint32_t sequence, uint32_t thread, const R&... records) {
    format::GrowableBuffer payload;
    format::CodecState state;
    (format::encode_record(records, state, payload), ...);
    return add_payload(writer, sequence, thread, payload, sizeof...(records));
  }
  // The same for records of any types, in a list.
  uint64_t add_chunk_of(uint32_t writer, uint32_t sequence, uint32_t thread,
                        const std::vector<format::Record>& records) {
    format::GrowableBuffer payload;
    format::CodecState state;
    for (const format::Record& record : records) {
      std::visit([&](const auto& r) { format::encode_record(r, state, payload); }, record);
    }
    return add_payload(writer, sequence, thread, payload, records.size());
  }

  // Writes the chunk at `offset` over with `records`, as a bounded trace's writer reuses it.
  void replace_chunk_of(uint64_t offset, uint32_t writer, uint32_t sequence, uint32_t thread,
                        const std::vector<format::Record>& records) {
    format::GrowableBuffer payload;
    format::CodecState state;
    for (const format::Record& record : records) {
      std::visit([&](const auto& r) { format::encode_record(r, state, payload); }, record);
    }
    std::memset(bytes_.data() + offset, 0, chunk_size_);
    write_payload(offset, writer, sequence, thread, payload, records.size());
  }

  // The published length of the chunk at `chunk`.
  uint32_t published_length(uint64_t chunk) const {
    uint64_t word;
    std::memcpy(&word, bytes_.data() + chunk + format::ChunkHeaderLayout::kPublished, sizeof word);
    return format::published_length(word);
  }
  // Replaces the count word (format 4.1) of the chunk at `chunk`.
  void set_counted(uint64_t chunk, uint64_t word) {
    put<uint64_t>(bytes_.data() + chunk + format::ChunkHeaderLayout::kCounted, word);
  }

  // A chunk's worth of zeros: space reserved but never handed out.
  void add_empty_chunk() { bytes_.resize(bytes_.size() + chunk_size_, 0); }

  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  uint64_t add_payload(uint32_t writer, uint32_t sequence, uint32_t thread,
                       const format::GrowableBuffer& payload, std::size_t records) {
    const uint64_t offset = bytes_.size();
    bytes_.resize(offset + chunk_size_, 0);
    write_payload(offset, writer, sequence, thread, payload, records);
    return offset;
  }
  void write_payload(uint64_t offset, uint32_t writer, uint32_t sequence, uint32_t thread,
                     const format::GrowableBuffer& payload, std::size_t records) {
    uint8_t* chunk = bytes_.data() + offset;
    using L = format::ChunkHeaderLayout;
    put<uint32_t>(chunk + L::kMagic, format::kChunkMagic);
    put<uint32_t>(chunk + L::kWriter, writer);
    put<uint32_t>(chunk + L::kSequence, sequence);
    put<uint32_t>(chunk + L::kThread, thread);
    // An empty payload's data() may be null, which memcpy may not be given even for no bytes.
    if (payload.size() > 0)
      std::memcpy(chunk + format::kChunkHeaderSize, payload.data(), payload.size());
    const uint32_t length = static_cast<uint32_t>(payload.size());
    put<uint64_t>(chunk + L::kPublished,
                  format::published_word(
                      length, format::extend_checksum(checksum_, 0, payload.data(), length)));
    if (counted_) {
      put<uint64_t>(chunk + L::kCounted,
                    format::counted_word(length, static_cast<uint32_t>(records)));
    }
  }

  template <class T>
  static void put(uint8_t* p, T v) {
    std::memcpy(p, &v, sizeof v);
  }

  uint32_t chunk_size_;
  format::ChunkChecksum checksum_;
  bool counted_;
  std::vector<uint8_t> bytes_;
};

}  // namespace gmt::test
