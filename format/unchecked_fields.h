// SPDX-License-Identifier: Apache-2.0
// Decoding an allocation or a free, the records nearly every trace is made of, without the
// per-field checks of the general decoder: RecordDecoder's fast path (record_decoder.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/record_encoder.h"
#include "format/records.h"
#include "format/varint.h"

namespace gmt::format {

// The fields of a record of integer fields only, read without a bound check per field: its
// caller has made sure that every byte the widest encoding could take is readable (past the
// record's end if need be). Whatever does not check out (a field past the record's end, a
// varint of more than 8 bytes, a value out of range) only marks the result bad, and the caller
// decodes the record again with FieldReader, which says what is wrong. The codec state is
// written by commit() only, so that a bad record leaves it as it was for the second reading.
// Allocations and frees are nearly every record of a trace: checking each field as FieldReader
// does costs more than the rest of their decoding.
class UncheckedFieldReader {
 public:
  UncheckedFieldReader(const uint8_t* begin, const uint8_t* end, const CodecState& state)
      : pos_(begin), end_(end), time_(state.last_time_ns), address_(state.last_address) {}

  void u64(const char* /*name*/, uint64_t& v) { v = varint(); }
  void u32(const char* /*name*/, uint32_t& v) {
    const uint64_t raw = varint();
    bad_ |= raw > UINT32_MAX;
    v = static_cast<uint32_t>(raw);
  }
  void i32(const char* /*name*/, int32_t& v) {
    const int64_t value = unzigzag(varint());
    bad_ |= value < INT32_MIN || value > INT32_MAX;
    v = static_cast<int32_t>(value);
  }
  void kind(const char* /*name*/, MemoryKind& k) {
    const uint64_t raw = varint();
    bad_ |= raw >= kMemoryKindCount;
    k = static_cast<MemoryKind>(raw);
  }
  void api(const char* /*name*/, Api& a) {
    const uint64_t raw = varint();
    bad_ |= raw >= static_cast<uint64_t>(Api::kCount);
    a = static_cast<Api>(raw);
  }
  void public_api(const char* /*name*/, Api& a) {
    // Absent from older files; past the end, the record is bad anyway (checked in ok()).
    if (pos_ >= end_) {
      a = Api::kUnknown;
      return;
    }
    const uint64_t raw = varint();
    a = raw < static_cast<uint64_t>(Api::kCount) ? static_cast<Api>(raw) : Api::kUnknown;
  }
  void time(const char* /*name*/, uint64_t& t) {
    time_ += static_cast<uint64_t>(unzigzag(varint()));
    t = time_;
  }
  void address(const char* /*name*/, uint64_t& a) {
    address_ += static_cast<uint64_t>(unzigzag(varint()));
    a = address_;
  }

  bool ok() const { return !bad_ && pos_ <= end_; }
  void commit(CodecState& state) const {
    state.last_time_ns = time_;
    state.last_address = address_;
  }

 private:
  uint64_t varint() {
    uint64_t v = *pos_;
    if (v < 0x80) {
      ++pos_;
      return v;
    }
    const std::size_t n = get_short_varint(pos_, &v);
    bad_ |= n == 0;
    pos_ += n;
    return v;
  }

  const uint8_t* pos_;
  const uint8_t* end_;
  uint64_t time_;
  uint64_t address_;
  bool bad_ = false;
};

// The bytes UncheckedFieldReader may read of a record of type R: up to 8 per field (more is a
// varint it leaves to FieldReader), each read as 8 bytes.
template <class R>
constexpr std::size_t unchecked_read_bytes() {
  return max_payload_bytes<R>() / 10 * 8 + 8;
}

// An allocation's or a free's fields (R), without a check per field, into `out` (a free's are
// a subset of an allocation's, by the same names), for a record whose
// unchecked_read_bytes<R>() from `begin` are readable: false, the codec state unchanged, when
// FieldReader must decode it.
template <class R>
inline bool decode_event_as(const uint8_t* begin, const uint8_t* end, CodecState& state,
                            uint64_t thread, AllocRecord& out) {
  UncheckedFieldReader reader(begin, end, state);
  R::fields(out, reader);
  if (!reader.ok()) [[unlikely]]
    return false;
  reader.commit(state);
  out.thread = thread;
  return true;
}

}  // namespace gmt::format
