// SPDX-License-Identifier: Apache-2.0
// A trace file mapped read-only. Mapping (rather than reading) lets the reader stream a trace
// of any size: only the pages being decoded are resident.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "format/trace_reader.h"

namespace gmt::analyzer {

class MappedFile {
 public:
  // Throws TraceError naming the file when it cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }

  // Copies n bytes at `offset` without mapping them into this process (pread).
  bool copy(uint64_t offset, uint8_t* out, std::size_t n) const;
  // Drops the pages of [offset, offset + length) from this process: a reader done with them
  // keeps the trace's resident size small (they are read again from the page cache if needed).
  void release(uint64_t offset, uint64_t length) const;
  // copy() and release() as the trace reader takes them.
  format::PageAccess page_access() const {
    return {[this](uint64_t offset, uint8_t* out, std::size_t n) { return copy(offset, out, n); },
            [this](uint64_t offset, uint64_t length) { release(offset, length); }};
  }

 private:
  const uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  int fd_ = -1;  // kept open for copy()
};

}  // namespace gmt::analyzer
