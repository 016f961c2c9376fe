#include "format/record_decoder.h"

#include <utility>

#include "format/varint.h"

namespace gmt::format {
namespace {

// Upper bounds that no real trace reaches; anything above them is corruption, and refusing it
// keeps a damaged length from making the reader allocate gigabytes.
constexpr uint64_t kMaxStringBytes = 1u << 20;
constexpr uint64_t kMaxListEntries = 1u << 16;

class FieldReader {
 public:
  FieldReader(const uint8_t* begin, const uint8_t* end, CodecState& state)
      : pos_(begin), end_(end), state_(state) {}

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

  const std::string& error() const { return error_; }

 private:
  bool varint(uint64_t& v, const char* what) {
    if (!error_.empty()) return false;
    if (!get_varint(&pos_, end_, &v)) {
      fail(std::string("bad or missing ") + what + " field");
      return false;
    }
    return true;
  }
  void fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }

  const uint8_t* pos_;
  const uint8_t* end_;
  CodecState& state_;
  std::string error_;
};

template <class R>
std::optional<Record> decode_as(const uint8_t* begin, const uint8_t* end, CodecState& state,
                                std::string& error) {
  R record;
  FieldReader reader(begin, end, state);
  R::fields(record, reader);
  if (!reader.error().empty()) {
    error = reader.error();
    return std::nullopt;
  }
  return Record{std::move(record)};
}

}  // namespace

RecordDecoder::RecordDecoder(std::span<const uint8_t> payload, uint64_t file_offset)
    : bytes_(payload), file_offset_(file_offset) {}

void RecordDecoder::stop(StreamEnd end, uint64_t offset, std::string reason) {
  status_.end = end;
  status_.offset = offset;
  status_.reason = std::move(reason);
}

std::optional<Record> RecordDecoder::decode_payload(uint64_t type, const uint8_t* begin,
                                                    const uint8_t* end, uint64_t frame_offset) {
  std::string error;
  std::optional<Record> record;
  switch (static_cast<RecordType>(type)) {
    case RecordType::kProcessInfo:
      record = decode_as<ProcessInfoRecord>(begin, end, state_, error);
      break;
    case RecordType::kAlloc:
      record = decode_as<AllocRecord>(begin, end, state_, error);
      break;
    case RecordType::kFree:
      record = decode_as<FreeRecord>(begin, end, state_, error);
      break;
    case RecordType::kAllocFailed:
      record = decode_as<AllocFailedRecord>(begin, end, state_, error);
      break;
    case RecordType::kEnd:
      record = decode_as<EndRecord>(begin, end, state_, error);
      break;
    case RecordType::kContext:
      record = decode_as<ContextRecord>(begin, end, state_, error);
      break;
    case RecordType::kContextDestroyed:
      record = decode_as<ContextDestroyedRecord>(begin, end, state_, error);
      break;
    case RecordType::kMap:
      record = decode_as<MapRecord>(begin, end, state_, error);
      break;
    case RecordType::kUnmap:
      record = decode_as<UnmapRecord>(begin, end, state_, error);
      break;
    case RecordType::kRetainHandle:
      record = decode_as<RetainHandleRecord>(begin, end, state_, error);
      break;
    case RecordType::kStack:
      record = decode_as<StackRecord>(begin, end, state_, error);
      break;
    case RecordType::kModule:
      record = decode_as<ModuleRecord>(begin, end, state_, error);
      break;
    case RecordType::kPythonCode:
      record = decode_as<PythonCodeRecord>(begin, end, state_, error);
      break;
    case RecordType::kThread:
      record = decode_as<ThreadRecord>(begin, end, state_, error);
      break;
    case RecordType::kDevice:
      record = decode_as<DeviceRecord>(begin, end, state_, error);
      break;
    case RecordType::kSample:
      record = decode_as<SampleRecord>(begin, end, state_, error);
      break;
    case RecordType::kName:
      record = decode_as<NameRecord>(begin, end, state_, error);
      break;
    case RecordType::kPhase:
      record = decode_as<PhaseRecord>(begin, end, state_, error);
      break;
    case RecordType::kNote:
      record = decode_as<NoteRecord>(begin, end, state_, error);
      break;
    case RecordType::kPool:
      record = decode_as<PoolRecord>(begin, end, state_, error);
      break;
    default:
      return std::nullopt;  // unknown type: the caller skips it
  }
  if (!record) {
    stop(StreamEnd::kCorrupt, frame_offset,
         "corrupt record of type " + std::to_string(type) + ": " + error);
  }
  return record;
}

std::optional<Record> RecordDecoder::next() {
  while (status_.end == StreamEnd::kNotYet) {
    const uint8_t* const file_begin = bytes_.data();
    const uint8_t* const file_end = file_begin + bytes_.size();
    const uint64_t frame_offset = file_offset_ + pos_;
    if (pos_ == bytes_.size()) {
      stop(StreamEnd::kClean, frame_offset, "");
      break;
    }
    const uint8_t* p = file_begin + pos_;
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
    auto record = decode_payload(type, p, payload_end, frame_offset);
    if (record) return record;
    if (status_.end != StreamEnd::kNotYet) break;
    ++unknown_skipped_;
  }
  return std::nullopt;
}

}  // namespace gmt::format
