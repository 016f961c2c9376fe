// A trace file mapped read-only. Mapping (rather than reading) lets the reader stream a trace
// of any size: only the pages being decoded are resident.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace gmt::analyzer {

class MappedFile {
 public:
  // Throws TraceError naming the file when it cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  const uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace gmt::analyzer
