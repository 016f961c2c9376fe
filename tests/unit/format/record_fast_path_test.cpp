// SPDX-License-Identifier: Apache-2.0
// RecordDecoder reads allocations and frees through a fast path without a check per field
// (format/unchecked_fields.h) when the bytes the widest encoding could take are readable after
// them, and falls back to the checked decoder for anything it does not accept. Whatever the
// bytes, both must give the same records and stop at the same place for the same reason.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "format/record_decoder.h"
#include "format/varint.h"
#include "tests/unit/trace_bytes.h"

namespace gmt::format {
namespace {

// Every integer field of a record, in order, as 64-bit values; then its thread.
struct FieldValues {
  std::vector<uint64_t> values;
  void u64(const char*, const uint64_t& v) { values.push_back(v); }
  void u32(const char*, const uint32_t& v) { values.push_back(v); }
  void i32(const char*, const int32_t& v) { values.push_back(static_cast<uint64_t>(v)); }
  void time(const char*, const uint64_t& v) { values.push_back(v); }
  void address(const char*, const uint64_t& v) { values.push_back(v); }
  void kind(const char*, const MemoryKind& k) { values.push_back(static_cast<uint64_t>(k)); }
  void api(const char*, const Api& a) { values.push_back(static_cast<uint64_t>(a)); }
  void public_api(const char*, const Api& a) { values.push_back(static_cast<uint64_t>(a)); }
};

std::vector<uint64_t> values_of(const Record& record) {
  return std::visit(
      [&](const auto& r) {
        FieldValues v;
        v.values.push_back(record.index());
        if constexpr (std::is_same_v<std::decay_t<decltype(r)>, AllocRecord> ||
                      std::is_same_v<std::decay_t<decltype(r)>, FreeRecord>) {
          std::decay_t<decltype(r)>::fields(r, v);
          v.values.push_back(r.thread);
        }
        return v.values;
      },
      record);
}

struct Decoded {
  std::vector<std::vector<uint64_t>> records;
  StreamEnd end;
  uint64_t offset;
  std::string reason;
};

Decoded decode(const std::vector<uint8_t>& bytes, bool checked) {
  RecordDecoder decoder(bytes, 1000, 77);
  Decoded d;
  Record record;
  while (checked ? decoder.next_into_checked(record) : decoder.next_into(record)) {
    d.records.push_back(values_of(record));
  }
  d.end = decoder.status().end;
  d.offset = decoder.status().offset;
  d.reason = decoder.status().reason;
  return d;
}

std::vector<uint8_t> varint(uint64_t v) {
  uint8_t out[kMaxVarintBytes];
  return std::vector<uint8_t>(out, out + put_varint(out, v));
}

// `v` in exactly n bytes (n at least its shortest encoding): zero groups with continuation
// bits after its own, which readers accept as the same value.
std::vector<uint8_t> padded_varint(uint64_t v, std::size_t n) {
  std::vector<uint8_t> out = varint(v);
  out.back() |= 0x80;
  while (out.size() < n - 1) out.push_back(0x80);
  out.push_back(0x00);
  return out;
}

// A framed record: type, payload length (or `length` when given), the fields' bytes.
std::vector<uint8_t> frame(RecordType type, const std::vector<std::vector<uint8_t>>& fields,
                           int length = -1) {
  std::vector<uint8_t> payload;
  for (const auto& f : fields) payload.insert(payload.end(), f.begin(), f.end());
  std::vector<uint8_t> out = varint(static_cast<uint64_t>(type));
  const std::vector<uint8_t> len =
      varint(length >= 0 ? static_cast<uint64_t>(length) : payload.size());
  out.insert(out.end(), len.begin(), len.end());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

uint64_t api_id(Api a) {
  return static_cast<uint64_t>(a);
}

// An allocation's fields, encoded: time delta, device, kind, api, address delta, size,
// context, stack, public api; each replaceable.
struct AllocFields {
  std::vector<uint8_t> time = varint(zigzag(25));
  std::vector<uint8_t> device = varint(zigzag(1));
  std::vector<uint8_t> kind = varint(static_cast<uint64_t>(MemoryKind::kDevice));
  std::vector<uint8_t> api = varint(api_id(Api::kCuMemAlloc));
  std::vector<uint8_t> address = varint(zigzag(0x200000));
  std::vector<uint8_t> size = varint(1 << 20);
  std::vector<uint8_t> context = varint(3);
  std::vector<uint8_t> stack = varint(1500);
  std::vector<uint8_t> public_api = varint(api_id(Api::kCudaMalloc));

  std::vector<uint8_t> framed(int length = -1) const {
    return frame(RecordType::kAlloc,
                 {time, device, kind, api, address, size, context, stack, public_api}, length);
  }
  std::size_t bytes_before_size() const {
    return time.size() + device.size() + kind.size() + api.size() + address.size();
  }
};

// `record` between an ordinary allocation and enough ordinary frees that every record before
// them has room for the fast path.
std::vector<uint8_t> surrounded(const std::vector<uint8_t>& record) {
  test::TraceBytes before;
  before.add(test::alloc_at(1000, 0, 0x7f0000000000, 4096));
  std::vector<uint8_t> bytes = before.bytes();
  bytes.insert(bytes.end(), record.begin(), record.end());
  test::TraceBytes after;
  for (int i = 0; i < 40; ++i) after.add(test::free_at(2000 + i, 0x7f0000000000 + 4096 * i));
  bytes.insert(bytes.end(), after.bytes().begin(), after.bytes().end());
  return bytes;
}

void expect_same_both_ways(const std::vector<uint8_t>& bytes, const std::string& what) {
  const Decoded fast = decode(bytes, false);
  const Decoded checked = decode(bytes, true);
  EXPECT_EQ(fast.records, checked.records) << what;
  EXPECT_EQ(fast.end, checked.end) << what;
  EXPECT_EQ(fast.offset, checked.offset) << what;
  EXPECT_EQ(fast.reason, checked.reason) << what;
}

TEST(RecordFastPath, OrdinaryAllocationsAndFreesDecodeAsTheCheckedDecoderReadsThem) {
  test::TraceBytes trace;
  // Small and large deltas both ways, the widest sizes, devices -1 and high, large stack ids.
  const uint64_t addresses[] = {0x10, 0x7f0000200000, 0xffffffffffffff00, 0x20, 0x7f0000000000};
  for (int i = 0; i < 200; ++i) {
    AllocRecord a = test::alloc_at(1000 + 37 * i * i, (i % 9) - 1, addresses[i % 5] + 64 * i,
                                   i % 3 == 0 ? ~0ull : 1ull << (i % 64),
                                   static_cast<MemoryKind>(i % kMemoryKindCount));
    a.context = static_cast<uint32_t>(i * 1000003);
    a.stack = i % 7 == 0 ? UINT32_MAX : static_cast<uint32_t>(i * i);
    a.public_api = static_cast<Api>(i % static_cast<int>(Api::kCount));
    trace.add(a);
    FreeRecord f = test::free_at(i % 4 == 0 ? 5 : 1000 + 37 * i * i + 1, addresses[(i + 2) % 5]);
    f.public_api = static_cast<Api>((i * 7) % static_cast<int>(Api::kCount));
    trace.add(f);
  }
  const Decoded fast = decode(trace.bytes(), false);
  ASSERT_EQ(fast.records.size(), 400u);
  EXPECT_EQ(fast.end, StreamEnd::kClean);
  expect_same_both_ways(trace.bytes(), "ordinary records");
  // The values are the ones written, not merely the same both ways.
  const std::vector<uint64_t> first = fast.records[0];
  EXPECT_EQ(first[1], 1000u);                      // time
  EXPECT_EQ(first[2], static_cast<uint64_t>(-1));  // device
  EXPECT_EQ(first[5], 0x10u);                      // address
  EXPECT_EQ(first[6], ~0ull);                      // size
  EXPECT_EQ(first[8], UINT32_MAX);                 // stack
  EXPECT_EQ(first.back(), 77u);                    // the decoder's thread
}

TEST(RecordFastPath, LongAndPaddedVarintsGoToTheCheckedDecoderAndReadTheSame) {
  AllocFields nine;
  nine.address = padded_varint(zigzag(0x200000), 9);
  AllocFields ten;
  ten.size = padded_varint(5, 10);
  AllocFields full;
  full.address = varint(zigzag(INT64_MIN));  // ten bytes
  for (const auto& [fields, what] :
       {std::pair{nine, "9-byte address"}, std::pair{ten, "10-byte size"},
        std::pair{full, "10-byte address"}}) {
    const std::vector<uint8_t> bytes = surrounded(fields.framed());
    const Decoded fast = decode(bytes, false);
    ASSERT_GE(fast.records.size(), 2u) << what;
    EXPECT_EQ(fast.end, StreamEnd::kClean) << what;
    expect_same_both_ways(bytes, what);
  }
  // The padded fields read as their value.
  const Decoded padded = decode(surrounded(ten.framed()), false);
  EXPECT_EQ(padded.records[1][6], 5u);
}

TEST(RecordFastPath, OptionalAndUnknownPublicApisReadTheSame) {
  AllocFields without;  // a 3.0 record: no public api
  const std::vector<uint8_t> old_alloc =
      frame(RecordType::kAlloc, {without.time, without.device, without.kind, without.api,
                                 without.address, without.size, without.context, without.stack});
  AllocFields newer;
  newer.public_api = varint(9999);
  const std::vector<uint8_t> old_free =
      frame(RecordType::kFree, {varint(zigzag(3)), varint(api_id(Api::kCuMemFree)), varint(32)});
  AllocFields trailing;  // bytes after the last field this build knows: a newer writer's
  std::vector<uint8_t> longer = trailing.framed();
  longer[1] += 3;
  for (uint8_t b : {1, 2, 3}) longer.push_back(b);
  for (const auto& [bytes, what] :
       {std::pair{surrounded(old_alloc), "allocation without public api"},
        std::pair{surrounded(newer.framed()), "public api 9999"},
        std::pair{surrounded(old_free), "free without public api"},
        std::pair{surrounded(longer), "fields past the known ones"}}) {
    const Decoded fast = decode(bytes, false);
    EXPECT_EQ(fast.end, StreamEnd::kClean) << what;
    EXPECT_EQ(fast.records.size(), 42u) << what;
    expect_same_both_ways(bytes, what);
  }
  const Decoded old = decode(surrounded(old_alloc), false);
  EXPECT_EQ(old.records[1][9], api_id(Api::kUnknown));
  const Decoded unknown = decode(surrounded(newer.framed()), false);
  EXPECT_EQ(unknown.records[1][9], api_id(Api::kUnknown));
}

TEST(RecordFastPath, ImpossibleValuesStopBothWaysAtTheRecordWithTheSameReason) {
  AllocFields kind;
  kind.kind = varint(200);
  AllocFields api;
  api.api = varint(9999);
  AllocFields device;
  device.device = varint(zigzag(int64_t{INT32_MAX} + 1));
  AllocFields context;
  context.context = varint(uint64_t{UINT32_MAX} + 1);
  AllocFields stack;
  stack.stack = varint(uint64_t{1} << 40);
  AllocFields overlong;
  overlong.address = std::vector<uint8_t>(11, 0x80);
  overlong.address.back() = 0x01;
  AllocFields cut;  // the record ends inside its size field
  cut.size = varint(1ull << 30);
  const std::vector<uint8_t> cut_bytes = cut.framed(static_cast<int>(cut.bytes_before_size() + 2));
  for (const auto& [bytes, what, reason] :
       {std::tuple{surrounded(kind.framed()), "kind 200", "unknown memory kind 200"},
        std::tuple{surrounded(api.framed()), "api 9999", "unknown api id 9999"},
        std::tuple{surrounded(device.framed()), "device past int32", "32-bit field out of range"},
        std::tuple{surrounded(context.framed()), "context past uint32",
                   "32-bit field out of range"},
        std::tuple{surrounded(stack.framed()), "stack past uint32", "32-bit field out of range"},
        std::tuple{surrounded(overlong.framed()), "11-byte varint", "bad or missing address"},
        std::tuple{surrounded(cut_bytes), "field past the record", "bad or missing integer"}}) {
    const Decoded fast = decode(bytes, false);
    EXPECT_EQ(fast.records.size(), 1u) << what;
    EXPECT_EQ(fast.end, StreamEnd::kCorrupt) << what;
    EXPECT_NE(fast.reason.find(reason), std::string::npos) << what << ": " << fast.reason;
    expect_same_both_ways(bytes, what);
  }
}

// A record cut short by the end of the bytes: the fast path must not take it (it may read past
// the record, never past the bytes; the sanitizer build catches a read past them).
TEST(RecordFastPath, RecordsEndingAtEveryDistanceFromTheEndReadTheSame) {
  test::TraceBytes trace;
  for (int i = 0; i < 12; ++i) {
    trace.add(test::alloc_at(100 + i, 0, 0xffffffffffff0000 - (uint64_t{1} << (4 * i)), ~0ull));
  }
  for (std::size_t cut = 0; cut <= trace.bytes().size(); ++cut) {
    const std::vector<uint8_t> bytes(trace.bytes().begin(), trace.bytes().begin() + cut);
    expect_same_both_ways(bytes, "cut at " + std::to_string(cut));
  }
}

}  // namespace
}  // namespace gmt::format
