// SPDX-License-Identifier: Apache-2.0
// Turns records into framed bytes: [varint type][varint payload length][payload]. The length
// lets a reader skip record types it does not know and tell a torn tail from a complete record.
// Header-only and allocation-free for fixed-size buffers, because the traced process uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "format/hot_path.h"
#include "format/records.h"
#include "format/varint.h"

namespace gmt::format {

// A byte buffer on the stack for one event record. Events are bounded (every field is a
// varint), so kCapacity can never be exceeded by them; `overflowed` guards the invariant.
template <std::size_t kCapacity>
class FixedBuffer {
 public:
  void append(const uint8_t* bytes, std::size_t n) {
    if (n > kCapacity - size_) {
      overflowed_ = true;
      return;
    }
    std::memcpy(data_ + size_, bytes, n);
    size_ += n;
  }
  void put_varint(uint64_t v) {
    if (kCapacity - size_ < kMaxVarintBytes) {
      overflowed_ = true;
      return;
    }
    size_ += format::put_varint(data_ + size_, v);
  }
  const uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool overflowed() const { return overflowed_; }

 private:
  uint8_t data_[kCapacity];
  std::size_t size_ = 0;
  bool overflowed_ = false;
};

class GrowableBuffer {
 public:
  void append(const uint8_t* bytes, std::size_t n) {
    bytes_.insert(bytes_.end(), bytes, bytes + n);
  }
  void put_varint(uint64_t v) {
    uint8_t tmp[kMaxVarintBytes];
    append(tmp, format::put_varint(tmp, v));
  }
  const uint8_t* data() const { return bytes_.data(); }
  std::size_t size() const { return bytes_.size(); }
  bool overflowed() const { return false; }

 private:
  std::vector<uint8_t> bytes_;
};

// State carried from one record to the next: times and addresses are stored as differences
// from the previous record's, which are small (microseconds apart; allocators reuse nearby
// addresses).
struct CodecState {
  uint64_t last_time_ns = 0;
  uint64_t last_address = 0;
};

template <class Out>
class FieldWriter {
 public:
  FieldWriter(Out& out, CodecState& state) : out_(out), state_(state) {}

  void u64(const char* /*name*/, uint64_t v) { varint(v); }
  void u32(const char* /*name*/, uint32_t v) { varint(v); }
  void i32(const char* /*name*/, int32_t v) { varint(zigzag(v)); }
  void kind(const char* /*name*/, MemoryKind k) { varint(static_cast<uint64_t>(k)); }
  void api(const char* /*name*/, Api a) { varint(static_cast<uint64_t>(a)); }
  void public_api(const char* /*name*/, Api a) { varint(static_cast<uint64_t>(a)); }
  void time(const char* /*name*/, uint64_t t) {
    // Signed: a later trace layout may interleave threads whose clocks were read out of order.
    varint(zigzag(static_cast<int64_t>(t - state_.last_time_ns)));
    state_.last_time_ns = t;
  }
  void address(const char* /*name*/, uint64_t a) {
    varint(zigzag(static_cast<int64_t>(a - state_.last_address)));
    state_.last_address = a;
  }
  // Frames alternate between a few modules: deltas from the previous frame stay short.
  void address_list(const char* /*name*/, const std::vector<uint64_t>& list) {
    varint(list.size());
    uint64_t previous = 0;
    for (uint64_t a : list) {
      varint(zigzag(static_cast<int64_t>(a - previous)));
      previous = a;
    }
  }
  void str(const char* /*name*/, const std::string& s) {
    varint(s.size());
    out_.append(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  }
  // For a writer that builds a string without allocating (a note made in a signal handler).
  void str(const char* /*name*/, std::string_view s) {
    varint(s.size());
    out_.append(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  }
  void str_list(const char* /*name*/, const std::vector<std::string>& list) {
    varint(list.size());
    for (const auto& s : list) str(nullptr, s);
  }

 private:
  void varint(uint64_t v) { out_.put_varint(v); }

  Out& out_;
  CodecState& state_;
};

// Appends one framed record to `out`. Payload is built first in a buffer of the same type so
// that its length can precede it.
template <class Out, class R>
void encode_record(const R& record, CodecState& state, Out& out) {
  Out payload;
  FieldWriter<Out> writer(payload, state);
  R::fields(record, writer);
  uint8_t tmp[2 * kMaxVarintBytes];
  std::size_t n = put_varint(tmp, static_cast<uint64_t>(R::kType));
  n += put_varint(tmp + n, payload.size());
  out.append(tmp, n);
  out.append(payload.data(), payload.size());
}

// Whether encode_record_at takes R: integer fields only, a payload under 128 bytes at most and
// a type under 128 (the events), so that type and length take one byte each.
template <class R>
constexpr bool encodes_in_place() {
  if constexpr (requires { R::kMaxBytes; }) {
    return false;
  } else {
    return max_payload_bytes<R>() < 0x80 && static_cast<uint64_t>(R::kType) < 0x80;
  }
}

// A record's integer fields as the varints they become (deltas and zigzag taken), gathered by
// FieldWriter for one call of put_varints(). A record with other fields does not compile here.
template <std::size_t kFields>
class VarintList {
 public:
  void put_varint(uint64_t v) { values_[count_++] = v; }
  void append(const uint8_t* bytes, std::size_t n) = delete;
  const uint64_t* values() const { return values_; }
  std::size_t count() const { return count_; }

 private:
  uint64_t values_[kFields];
  std::size_t count_ = 0;
};

// The same framing, encoded in place at `at` (with max_record_bytes<R>() of room): the payload
// goes straight to at + 2. Returns the framed size; 0 (never, by the static bound) if the
// record did not fit. The bound leaves room for every field's longest varint, so nothing is
// checked field by field.
template <class R>
GMT_HOT_PATH std::size_t encode_record_at(const R& record, CodecState& state, uint8_t* at) {
  static_assert(encodes_in_place<R>());
  VarintList<max_payload_bytes<R>() / kMaxVarintBytes> fields;
  FieldWriter<decltype(fields)> writer(fields, state);
  R::fields(record, writer);
  const std::size_t size = put_varints(at + 2, fields.values(), fields.count());
  if (size >= 0x80) return 0;
  at[0] = static_cast<uint8_t>(R::kType);
  at[1] = static_cast<uint8_t>(size);
  return size + 2;
}

}  // namespace gmt::format
