// SPDX-License-Identifier: Apache-2.0
// Builds runs of framed records (a chunk's payload) in memory for tests, with the same encoder
// the preload library uses.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "format/file_header.h"
#include "format/record_encoder.h"

namespace gmt::test {

class TraceBytes {
 public:
  template <class R>
  TraceBytes& add(const R& record) {
    format::GrowableBuffer frame;
    format::encode_record(record, state_, frame);
    bytes_.insert(bytes_.end(), frame.data(), frame.data() + frame.size());
    return *this;
  }

  // Bytes as they are, outside the encoder (a record it does not write, or damage).
  TraceBytes& raw(std::initializer_list<uint8_t> bytes) {
    bytes_.insert(bytes_.end(), bytes);
    return *this;
  }

  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
  format::CodecState state_;
};

// The process description a trace starts with, all but its pid left empty.
inline format::ProcessInfoRecord process_record(uint32_t pid = 7) {
  format::ProcessInfoRecord p;
  p.pid = pid;
  return p;
}

inline format::AllocRecord alloc_at(uint64_t t, int device, uint64_t address, uint64_t size,
                                    format::MemoryKind kind = format::MemoryKind::kDevice) {
  format::AllocRecord r;
  r.time_ns = t;
  r.thread = 100;
  r.device = device;
  r.kind = kind;
  r.api = format::Api::kCuMemAlloc;
  r.address = address;
  r.size = size;
  return r;
}

inline format::FreeRecord free_at(uint64_t t, uint64_t address) {
  format::FreeRecord r;
  r.time_ns = t;
  r.thread = 100;
  r.api = format::Api::kCuMemFree;
  r.address = address;
  return r;
}

}  // namespace gmt::test
