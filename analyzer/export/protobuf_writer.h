// SPDX-License-Identifier: Apache-2.0
// The few protobuf encodings pprof's profile.proto needs (varints, length-delimited fields,
// packed repeated varints), written by hand so that the analyzer needs no protobuf library.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gmt::analyzer {

// Base 128, least significant group first, the high bit set on every byte but the last.
inline void append_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

// One message being encoded. Fields are appended in the order written; proto3 leaves zero
// scalars out, so callers may skip them (this writer writes whatever it is given).
class ProtoWriter {
 public:
  // Wire type 0: int64, uint64, bool. A negative int64 is its two's complement, ten bytes.
  void varint(uint32_t field, uint64_t value) {
    key(field, 0);
    append_varint(data_, value);
  }
  // Wire type 2: a string, bytes, or an embedded message's encoding.
  void bytes(uint32_t field, std::string_view value) {
    key(field, 2);
    append_varint(data_, value.size());
    data_.append(value);
  }
  void message(uint32_t field, const ProtoWriter& m) { bytes(field, m.data()); }
  // A repeated scalar field, packed: one length-delimited run of varints.
  void packed(uint32_t field, const std::vector<uint64_t>& values) {
    if (values.empty()) return;
    std::string run;
    for (uint64_t v : values) append_varint(run, v);
    bytes(field, run);
  }

  const std::string& data() const { return data_; }

 private:
  void key(uint32_t field, uint32_t wire_type) {
    append_varint(data_, uint64_t{field} << 3 | wire_type);
  }
  std::string data_;
};

}  // namespace gmt::analyzer
