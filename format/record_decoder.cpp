// SPDX-License-Identifier: Apache-2.0
#include "format/record_decoder.h"

#include <array>
#include <utility>
#include <variant>

#include "format/varint.h"

namespace gmt::format {
namespace {

// Upper bounds that no real trace reaches; anything above them is corruption, and refusing it
// keeps a damaged length from making the reader allocate gigabytes.
constexpr uint64_t kMaxStringBytes = 1u << 20;
constexpr uint64_t kMaxListEntries = 1u << 16;

class FieldReader {
 public:
  // Fields lie in [begin, end); bytes up to `limit` (at least `end`) may be read ahead, for
  // loading a varint's bytes at once.
  FieldReader(const uint8_t* begin, const uint8_t* end, const uint8_t* limit, CodecState& state)
      : pos_(begin), end_(end), limit_(limit), state_(state) {}

  void u64(const char* /*name*/, uint64_t& v) { varint(v, "integer"); }
  void u32(const char* /*name*/, uint32_t& v) {
    uint64_t raw = 0;
    if (varint(raw, "integer") && raw > UINT32_MAX) fail("32-bit field out of range");
    v = static_cast<uint32_t>(raw);
  }
  void i32(const char* /*name*/, int32_t& v) {
    uint64_t raw = 0;
    varint(raw, "integer");
    const int64_t value = unzigzag(raw);
    if (value < INT32_MIN || value > INT32_MAX) fail("32-bit field out of range");
    v = static_cast<int32_t>(value);
  }
  void kind(const char* /*name*/, MemoryKind& k) {
    uint64_t raw = 0;
    if (!varint(raw, "memory kind")) return;
    auto parsed = memory_kind_from_raw(raw);
    if (!parsed) return fail("unknown memory kind " + std::to_string(raw));
    k = *parsed;
  }
  void api(const char* /*name*/, Api& a) {
    uint64_t raw = 0;
    if (!varint(raw, "api")) return;
    auto parsed = api_from_raw(raw);
    if (!parsed) return fail("unknown api id " + std::to_string(raw));
    a = *parsed;
  }
  // Appended in 3.1: absent from older files, and a name a newer writer added is still only a
  // label, so neither makes the record unreadable.
  void public_api(const char* /*name*/, Api& a) {
    a = Api::kUnknown;
    if (pos_ == end_ || failed_) return;
    uint64_t raw = 0;
    if (!varint(raw, "public api")) return;
    a = api_from_raw(raw).value_or(Api::kUnknown);
  }
  void time(const char* /*name*/, uint64_t& t) {
    uint64_t raw = 0;
    if (!varint(raw, "time")) return;
    t = state_.last_time_ns + static_cast<uint64_t>(unzigzag(raw));
    state_.last_time_ns = t;
  }
  void address(const char* /*name*/, uint64_t& a) {
    uint64_t raw = 0;
    if (!varint(raw, "address")) return;
    a = state_.last_address + static_cast<uint64_t>(unzigzag(raw));
    state_.last_address = a;
  }
  void address_list(const char* /*name*/, std::vector<uint64_t>& list) {
    uint64_t n = 0;
    if (!varint(n, "list length")) return;
    if (n > StackRecord::kMaxFrames) return fail("stack of " + std::to_string(n) + " frames");
    list.resize(n);
    uint64_t previous = 0;
    for (auto& a : list) {
      uint64_t raw = 0;
      if (!varint(raw, "frame")) return;
      a = previous + static_cast<uint64_t>(unzigzag(raw));
      previous = a;
    }
  }
  void str(const char* /*name*/, std::string& s) {
    uint64_t n = 0;
    if (!varint(n, "string length")) return;
    if (n > kMaxStringBytes || n > static_cast<uint64_t>(end_ - pos_)) {
      return fail("string length " + std::to_string(n) + " runs past the record");
    }
    s.assign(reinterpret_cast<const char*>(pos_), n);
    pos_ += n;
  }
  void str_list(const char* /*name*/, std::vector<std::string>& list) {
    uint64_t n = 0;
    if (!varint(n, "list length")) return;
    if (n > kMaxListEntries) return fail("list of " + std::to_string(n) + " entries");
    list.resize(n);
    for (auto& s : list) str(nullptr, s);
  }

  bool failed() const { return failed_; }
  const std::string& error() const { return error_; }

 private:
  // Most fields are one byte (kinds, ids, small deltas); nearly all the others are at most 8
  // bytes with 8 bytes readable after them: one load and no branch on their length (a
  // byte-at-a-time loop mispredicts as lengths vary).
  bool varint(uint64_t& v, const char* what) {
    if (failed_) [[unlikely]]
      return false;
    if (pos_ != end_ && *pos_ < 0x80) {
      v = *pos_++;
      return true;
    }
    if (limit_ - pos_ >= 8) [[likely]] {
      const std::size_t n = get_short_varint(pos_, &v);
      if (n != 0 && n <= static_cast<std::size_t>(end_ - pos_)) [[likely]] {
        pos_ += n;
        return true;
      }
    }
    return varint_slowly(v, what);
  }
  [[gnu::noinline]] bool varint_slowly(uint64_t& v, const char* what) {
    if (!get_varint(&pos_, end_, &v)) {
      fail(std::string("bad or missing ") + what + " field");
      return false;
    }
    return true;
  }
  [[gnu::cold, gnu::noinline]] void fail(std::string why) {
    if (failed_) return;
    failed_ = true;
    error_ = std::move(why);
  }

  const uint8_t* pos_;
  const uint8_t* end_;
  const uint8_t* limit_;
  CodecState& state_;
  bool failed_ = false;
  std::string error_;
};

// Decodes into `out`, reusing the record it holds when it is of the same type. Every field of
// R is written (lists resized, strings assigned), so nothing of the previous record remains
// but `thread`, which the trace reader sets.
// The decoded record's time goes to `time` (0 for a record without one), and `thread` to its
// thread field.
template <class R>
bool decode_as(const uint8_t* begin, const uint8_t* end, const uint8_t* limit, CodecState& state,
               uint64_t thread, uint64_t& time, std::string& error, Record& out) {
  R* record = std::get_if<R>(&out);
  if (record == nullptr) record = &out.emplace<R>();
  FieldReader reader(begin, end, limit, state);
  R::fields(*record, reader);
  if (reader.failed()) [[unlikely]] {
    error = reader.error();
    return false;
  }
  if constexpr (requires { record->thread; }) record->thread = thread;
  if constexpr (requires { record->time_ns; }) {
    time = record->time_ns;
  } else {
    time = 0;
  }
  return true;
}

// Record types are numbered from 1 in the order of Record's alternatives.
template <std::size_t... I>
constexpr bool types_follow_variant_order(std::index_sequence<I...>) {
  return ((static_cast<std::size_t>(std::variant_alternative_t<I, Record>::kType) == I + 1) && ...);
}
static_assert(types_follow_variant_order(std::make_index_sequence<std::variant_size_v<Record>>()));

bool known_type(uint64_t type) {
  return type >= 1 && type <= std::variant_size_v<Record>;
}

// decode_as<R> by record type (RecordType numbers the variant's alternatives from 1).
using Decode = bool (*)(const uint8_t*, const uint8_t*, const uint8_t*, CodecState&, uint64_t,
                        uint64_t&, std::string&, Record&);
template <std::size_t... I>
constexpr std::array<Decode, sizeof...(I) + 1> decoders(std::index_sequence<I...>) {
  return {nullptr, &decode_as<std::variant_alternative_t<I, Record>>...};
}
constexpr auto kDecoders = decoders(std::make_index_sequence<std::variant_size_v<Record>>());

}  // namespace

RecordDecoder::RecordDecoder(std::span<const uint8_t> payload, uint64_t file_offset,
                             uint64_t thread)
    : bytes_(payload), file_offset_(file_offset), thread_(thread) {}

void RecordDecoder::stop(StreamEnd end, uint64_t offset, std::string reason) {
  status_.end = end;
  status_.offset = offset;
  status_.reason = std::move(reason);
}

RecordDecoder::Decoded RecordDecoder::decode_payload(uint64_t type, const uint8_t* begin,
                                                     const uint8_t* end, uint64_t frame_offset,
                                                     Record& out) {
  if (!known_type(type)) return Decoded::kUnknownType;  // the caller skips it
  if (type == static_cast<uint64_t>(RecordType::kBlockFreedAtOnce))
    return freed_at_once(begin, end, frame_offset, out);
  std::string error;
  const uint8_t* const limit = bytes_.data() + bytes_.size();
  const bool record = kDecoders[type](begin, end, limit, state_, thread_, last_time_, error, out);
  last_type_ = static_cast<RecordType>(type);
  if (!record) {
    stop(StreamEnd::kCorrupt, frame_offset,
         "corrupt record of type " + std::to_string(type) + ": " + error);
    return Decoded::kCorrupt;
  }
  if (last_type_ == RecordType::kBlock) {
    const auto& block = std::get<BlockRecord>(out);
    if (block.action == static_cast<uint32_t>(BlockAction::kFreeRequested)) {
      request_ = block;
      request_end_ = pos_;
    }
  }
  return Decoded::kRecord;
}

RecordDecoder::Decoded RecordDecoder::freed_at_once(const uint8_t* begin, const uint8_t* end,
                                                    uint64_t frame_offset, Record& out) {
  const char* why = nullptr;
  if (begin != end) {
    why = "a completed free (type 28) with a payload";
  } else if (request_end_ == 0 || file_offset_ + request_end_ != frame_offset) {
    why = "a completed free (type 28) that follows no free request";
  }
  if (why != nullptr) {
    stop(StreamEnd::kCorrupt, frame_offset, std::string("corrupt record: ") + why);
    return Decoded::kCorrupt;
  }
  BlockRecord completed = request_;
  completed.action = static_cast<uint32_t>(BlockAction::kFreeCompleted);
  out = completed;
  last_type_ = RecordType::kBlock;
  last_time_ = completed.time_ns;
  request_end_ = 0;  // one completion per request
  return Decoded::kRecord;
}

std::optional<Record> RecordDecoder::next() {
  Record record;
  if (!next_into(record)) return std::nullopt;
  return record;
}

uint64_t RecordDecoder::count_records(std::span<const uint8_t> payload) {
  // The same framing checks as next_into(): it stops where next_into() would.
  const uint8_t* p = payload.data();
  const uint8_t* const end = p + payload.size();
  uint64_t records = 0;
  while (p != end) {
    uint64_t type = 0;
    uint64_t length = 0;
    if (!get_varint(&p, end, &type) || !get_varint(&p, end, &length)) break;
    if (type == 0 || length > static_cast<uint64_t>(end - p)) break;
    p += length;
    if (known_type(type)) ++records;
  }
  return records;
}

bool RecordDecoder::next_into_checked(Record& out) {
  while (status_.end == StreamEnd::kNotYet) {
    const uint8_t* const file_begin = bytes_.data();
    const uint8_t* const file_end = file_begin + bytes_.size();
    const uint64_t frame_offset = file_offset_ + pos_;
    if (pos_ == bytes_.size()) {
      stop(StreamEnd::kClean, frame_offset, "");
      break;
    }
    const uint8_t* p = file_begin + pos_;
    if (file_end - p > static_cast<std::ptrdiff_t>(kPrefetchAhead)) {
      __builtin_prefetch(p + kPrefetchAhead);
    }
    uint64_t type = 0;
    uint64_t length = 0;
    if (!get_varint(&p, file_end, &type) || !get_varint(&p, file_end, &length)) {
      // A varint can only be cut short by the end of the file, or be overlong (corruption).
      const bool at_end =
          file_end - (file_begin + pos_) < static_cast<std::ptrdiff_t>(2 * kMaxVarintBytes);
      stop(at_end ? StreamEnd::kTruncated : StreamEnd::kCorrupt, frame_offset,
           at_end ? "the file ends inside a record header" : "unreadable record header");
      break;
    }
    if (type == 0) {
      // Zero bytes where a record should start: space that was reserved but never written.
      stop(StreamEnd::kTruncated, frame_offset, "zero bytes where a record should start");
      break;
    }
    if (length > static_cast<uint64_t>(file_end - p)) {
      stop(StreamEnd::kTruncated, frame_offset,
           "the file ends inside a record (" + std::to_string(length) + "-byte payload, " +
               std::to_string(file_end - p) + " bytes left)");
      break;
    }
    const uint8_t* payload_end = p + length;
    pos_ = static_cast<std::size_t>(payload_end - file_begin);
    const Decoded decoded = decode_payload(type, p, payload_end, frame_offset, out);
    if (decoded == Decoded::kRecord) return true;
    if (decoded == Decoded::kCorrupt) break;
    ++unknown_skipped_;
  }
  return false;
}

}  // namespace gmt::format
