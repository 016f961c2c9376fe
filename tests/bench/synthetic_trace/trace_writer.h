// SPDX-License-Identifier: Apache-2.0
// A trace file written as the preload library writes one: the same header page, 64 KiB chunks
// (or --chunk-size: small ones make the small traces of the fuzzer's seed corpus) handed out to
// one writer (thread) at a time in file order, records framed by format/record_encoder.h with the
// per-chunk delta state reset at every chunk, and the published word (length, CRC-32) in each
// chunk's header. Both generators write through it, so their traces read as real ones do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "format/chunk.h"
#include "format/file_header.h"
#include "format/record_encoder.h"
#include "format/records.h"

namespace gmt::bench {

// The file, and where its next chunk goes: chunks are handed out in file order as writers
// need them, so the chunks of different threads interleave as in a real trace.
class TraceFile {
 public:
  TraceFile(const std::string& path, uint32_t chunk_size);
  ~TraceFile();
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  uint64_t take_chunk_slot();
  uint32_t chunk_size() const { return chunk_size_; }
  void write_at(const uint8_t* bytes, std::size_t size, uint64_t offset);
  uint64_t size() const { return next_offset_; }

 private:
  std::string path_;
  uint32_t chunk_size_;
  int fd_ = -1;
  uint64_t next_offset_ = gmt::format::kFirstChunkOffset;
};

// One thread of the traced process: its current chunk, filled as TraceWriter::record fills it.
// The CRC is computed once when the chunk is written out; the published word is the same as
// the one the preload library's per-record updates end with.
class Writer {
 public:
  Writer(TraceFile& file, uint32_t id, uint32_t tid, std::string name)
      : file_(file), id_(id), tid_(tid), name_(std::move(name)), chunk_(file.chunk_size(), 0) {}

  // A new chunk when the record's bound no longer fits, as TraceWriter::record decides. Chunks
  // smaller than a bound (seed traces of 4 KiB chunks, smaller than a stack's 8 KiB bound) go
  // by the record's actual size instead, where the preload library would drop the record.
  template <class R>
  void record(const R& rec) {
    constexpr std::size_t kMaxBytes = gmt::format::max_record_bytes<R>();
    const std::size_t capacity = chunk_.size() - gmt::format::kChunkHeaderSize;
    if (!open_) next_chunk();
    gmt::format::CodecState codec = codec_;
    gmt::format::FixedBuffer<kMaxBytes> frame;
    gmt::format::encode_record(rec, codec, frame);
    if (frame.overflowed() || frame.size() > capacity) {
      throw std::runtime_error("a record larger than its bound or than a chunk");
    }
    const std::size_t need = kMaxBytes <= capacity ? kMaxBytes : frame.size();
    if (used_ + need > capacity) {
      next_chunk();
      return record(rec);
    }
    codec_ = codec;
    append(frame.data(), frame.size());
  }
  // A caching allocator's block event, as TraceWriter::write_block writes it: a completed free
  // right after its own request in this chunk, nothing between them, is the two bytes of a
  // BlockFreedAtOnce record (format 4.7).
  void block(const gmt::format::BlockRecord& rec);
  // The process description is larger than an event's bound; the writer encodes it unbounded.
  void process_info(const gmt::format::ProcessInfoRecord& rec);
  void flush();
  uint64_t time_ns = 0;  // of this thread's last record: a thread's records are in time order
  uint32_t tid() const { return tid_; }

 private:
  void next_chunk();
  void append(const uint8_t* bytes, std::size_t size);
  template <class T>
  void put(std::size_t at, T v) {
    std::memcpy(chunk_.data() + at, &v, sizeof v);
  }

  TraceFile& file_;
  uint32_t id_;
  uint32_t tid_;
  std::string name_;
  std::vector<uint8_t> chunk_;
  uint64_t offset_ = 0;
  uint32_t used_ = 0;
  uint32_t records_ = 0;
  uint32_t sequence_ = 0;
  bool open_ = false;
  gmt::format::CodecState codec_;
  gmt::format::BlockRecord request_;  // the last free request, and `used_` just after it (0: none)
  uint32_t request_end_ = 0;
};

// Modules: the program, the CUDA libraries, a framework; stacks point into them. Module m is
// loaded at 0x7e0000000000 + (m << 32), 64 MiB long. Their Module records, on `w` at `now`.
void write_modules(Writer& w, uint64_t now);

// A trace's first records on its main writer: the process (the same pid, host and start in every
// generated trace, so that the same options give the same bytes), run as `argv`, then its modules.
void write_process(Writer& w, uint64_t now, std::vector<std::string> argv);

}  // namespace gmt::bench
