// SPDX-License-Identifier: Apache-2.0
// The caching allocator's block events (BlockRecord, format 4.2): their encoding, byte for byte,
// and their round trip.
#include <gtest/gtest.h>

#include "format/file_header.h"
#include "format/record_decoder.h"
#include "tests/unit/trace_bytes.h"

namespace gmt::format {
namespace {

using test::TraceBytes;

BlockRecord block_at(uint64_t t, BlockAction action, uint64_t address, uint64_t size,
                     uint32_t stack = 0) {
  BlockRecord r;
  r.time_ns = t;
  r.allocator = static_cast<uint32_t>(BlockAllocator::kPytorch);
  r.action = static_cast<uint32_t>(action);
  r.device = 0;
  r.address = address;
  r.size = size;
  r.stack = stack;
  return r;
}

TEST(BlockRecord, IsTypeTwentyOneOfFormatFourAndEncodedInPlace) {
  EXPECT_EQ(static_cast<int>(BlockRecord::kType), 21);
  EXPECT_EQ(static_cast<int>(AllocatorSettingsRecord::kType), 27);
  EXPECT_EQ(static_cast<int>(ScopeRecord::kType), 29);
  EXPECT_EQ(static_cast<int>(TagRecord::kType), 30);
  EXPECT_EQ(static_cast<int>(SignalRecord::kType), 31);
  EXPECT_EQ(kVersionMajor, 4);
  EXPECT_EQ(kVersionMinor, 10);  // what every trace, with its blocks, is written as
  static_assert(encodes_in_place<BlockRecord>());
  // Eight varint fields of at most 10 bytes, behind a 2 x 10-byte frame bound.
  EXPECT_EQ(max_record_bytes<BlockRecord>(), 100u);
}

TEST(BlockRecord, EncodesEveryFieldAsACompactVarint) {
  CodecState state;
  GrowableBuffer out;
  encode_record(block_at(1000, BlockAction::kAlloc, 0x1000, 4096, 5), state, out);
  const std::vector<uint8_t> bytes(out.data(), out.data() + out.size());
  const std::vector<uint8_t> expected = {21,   11,    // type, payload length
                                         0xd0, 0x0f,  // time: zigzag(+1000) = 2000
                                         1,           // allocator: PyTorch
                                         0,           // action: alloc
                                         0,           // device: zigzag(0)
                                         0x80, 0x40,  // address: zigzag(+0x1000) = 0x2000
                                         0x80, 0x20,  // size: 4096
                                         0,           // stream
                                         5};          // stack
  EXPECT_EQ(bytes, expected);
}

TEST(BlockRecord, ItsAddressIsADeltaFromTheChunksLastAddress) {
  // A block inside the segment an allocation just made: two address bytes, not six.
  CodecState state;
  GrowableBuffer segment;
  encode_record(test::alloc_at(10, 0, 0x7f3a00000000, 20 << 20), state, segment);
  GrowableBuffer block;
  encode_record(block_at(10, BlockAction::kAlloc, 0x7f3a00000200, 512), state, block);
  // type, length, time 0, allocator, action, device, address +0x200 (2), size 512 (2), stream,
  // stack.
  EXPECT_EQ(block.size(), 12u);
  GrowableBuffer free_block;
  encode_record(block_at(12, BlockAction::kFreeRequested, 0x7f3a00000200, 512), state, free_block);
  EXPECT_EQ(free_block.size(), 11u);  // the same address: a one-byte delta of 0
}

TEST(BlockRecord, RoundTripsFieldForFieldWithTheChunksThread) {
  TraceBytes trace;
  BlockRecord oom = block_at(5000000000ull, BlockAction::kOom, 0, 1ull << 40, 77);
  oom.allocator = static_cast<uint32_t>(BlockAllocator::kCupy);
  oom.device = 3;
  oom.stream = 0x5555deadbeef;
  trace.add(test::process_record())
      .add(block_at(100, BlockAction::kSegmentAlloc, 0x7f0000000000, 20 << 20, 9))
      .add(block_at(90, BlockAction::kFreeCompleted, 0x7f0000100000, 1 << 20))  // time goes back
      .add(oom);
  RecordDecoder decoder(trace.bytes(), 0, 4242);
  ASSERT_TRUE(decoder.next());
  auto a = decoder.next();
  ASSERT_TRUE(a && std::holds_alternative<BlockRecord>(*a));
  const auto& seg = std::get<BlockRecord>(*a);
  EXPECT_EQ(seg.time_ns, 100u);
  EXPECT_EQ(seg.thread, 4242u);
  EXPECT_EQ(seg.allocator, 1u);
  EXPECT_EQ(seg.action, static_cast<uint32_t>(BlockAction::kSegmentAlloc));
  EXPECT_EQ(seg.device, 0);
  EXPECT_EQ(seg.address, 0x7f0000000000u);
  EXPECT_EQ(seg.size, 20u << 20);
  EXPECT_EQ(seg.stream, 0u);
  EXPECT_EQ(seg.stack, 9u);
  auto b = decoder.next();
  ASSERT_TRUE(b && std::holds_alternative<BlockRecord>(*b));
  EXPECT_EQ(std::get<BlockRecord>(*b).time_ns, 90u);
  EXPECT_EQ(std::get<BlockRecord>(*b).address, 0x7f0000100000u);
  EXPECT_EQ(std::get<BlockRecord>(*b).action, static_cast<uint32_t>(BlockAction::kFreeCompleted));
  auto c = decoder.next();
  ASSERT_TRUE(c && std::holds_alternative<BlockRecord>(*c));
  const auto& o = std::get<BlockRecord>(*c);
  EXPECT_EQ(o.time_ns, 5000000000u);
  EXPECT_EQ(o.allocator, 2u);
  EXPECT_EQ(o.action, 7u);
  EXPECT_EQ(o.device, 3);
  EXPECT_EQ(o.address, 0u);
  EXPECT_EQ(o.size, 1ull << 40);
  EXPECT_EQ(o.stream, 0x5555deadbeefu);
  EXPECT_EQ(o.stack, 77u);
  EXPECT_FALSE(decoder.next());
  EXPECT_EQ(decoder.status().end, StreamEnd::kClean);
}

// 4.7: a completed free right after its request is two bytes, type 28 and an empty payload,
// which the reader gives back as the request's block completed at the request's time.
TEST(BlockFreedAtOnce, IsReadAsItsRequestsBlockCompleted) {
  TraceBytes trace;
  BlockRecord request = block_at(500, BlockAction::kFreeRequested, 0x7f0000200000, 4096);
  request.stream = 0x5555;
  trace.add(test::process_record())
      .add(request)
      .raw({28, 0})
      .add(block_at(700, BlockAction::kAlloc, 0x7f0000200200, 512));  // deltas go on as before
  EXPECT_EQ(RecordDecoder::count_records(trace.bytes()), 4u);
  RecordDecoder decoder(trace.bytes(), 0, 4242);
  Record record;
  ASSERT_TRUE(decoder.next_into(record));
  ASSERT_TRUE(decoder.next_into(record));
  ASSERT_TRUE(decoder.next_into(record));
  EXPECT_EQ(decoder.last_type(), RecordType::kBlock);
  EXPECT_EQ(decoder.last_time(), 500u);
  ASSERT_TRUE(std::holds_alternative<BlockRecord>(record));
  const BlockRecord completed = std::get<BlockRecord>(record);
  EXPECT_EQ(completed.action, static_cast<uint32_t>(BlockAction::kFreeCompleted));
  EXPECT_EQ(completed.time_ns, 500u);
  EXPECT_EQ(completed.thread, 4242u);
  EXPECT_EQ(completed.allocator, 1u);
  EXPECT_EQ(completed.device, 0);
  EXPECT_EQ(completed.address, 0x7f0000200000u);
  EXPECT_EQ(completed.size, 4096u);
  EXPECT_EQ(completed.stream, 0x5555u);
  ASSERT_TRUE(decoder.next_into(record));
  const auto& next = std::get<BlockRecord>(record);
  EXPECT_EQ(next.time_ns, 700u);
  EXPECT_EQ(next.address, 0x7f0000200200u);
  EXPECT_FALSE(decoder.next_into(record));
  EXPECT_EQ(decoder.status().end, StreamEnd::kClean);
}

// Anywhere but right after a free request it is damage: reading stops there, with a reason,
// keeping every record before it.
TEST(BlockFreedAtOnce, AnywhereElseIsCorrupt) {
  struct Case {
    const char* name;
    std::vector<std::vector<uint8_t>> tail;  // after a process record and an alloc
    std::size_t records_before;              // records read before the damage
    const char* reason;
  };
  const auto request = [] {
    CodecState state;
    GrowableBuffer out;
    encode_record(block_at(600, BlockAction::kFreeRequested, 0x9000, 512), state, out);
    return std::vector<uint8_t>(out.data(), out.data() + out.size());
  }();
  const auto alloc = [] {
    CodecState state;
    GrowableBuffer out;
    encode_record(test::alloc_at(650, 0, 0xa000, 512), state, out);
    return std::vector<uint8_t>(out.data(), out.data() + out.size());
  }();
  const std::vector<Case> cases = {
      {"after an allocation", {{28, 0}}, 2, "follows no free request"},
      {"with a payload", {request, {28, 1, 0}}, 3, "with a payload"},
      {"twice", {request, {28, 0}, {28, 0}}, 4, "follows no free request"},
      {"after a record after the request", {request, alloc, {28, 0}}, 4, "follows no free request"},
  };
  for (const Case& c : cases) {
    TraceBytes trace;
    trace.add(test::process_record()).add(test::alloc_at(10, 0, 0x1000, 512));
    for (const auto& bytes : c.tail)
      trace.bytes().insert(trace.bytes().end(), bytes.begin(), bytes.end());
    RecordDecoder decoder(trace.bytes(), 4096);
    Record record;
    std::size_t read = 0;
    while (decoder.next_into(record)) ++read;
    EXPECT_EQ(read, c.records_before) << c.name;
    EXPECT_EQ(decoder.status().end, StreamEnd::kCorrupt) << c.name;
    EXPECT_NE(decoder.status().reason.find(c.reason), std::string::npos)
        << c.name << ": " << decoder.status().reason;
    EXPECT_EQ(decoder.status().offset, 4096 + trace.bytes().size() - c.tail.back().size())
        << c.name;
  }
}

}  // namespace
}  // namespace gmt::format
