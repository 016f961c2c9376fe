// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "format/record_decoder.h"
#include "format/record_encoder.h"
#include "tests/unit/trace_bytes.h"

namespace gmt::format {
namespace {

using test::TraceBytes;

ProcessInfoRecord sample_process() {
  ProcessInfoRecord p;
  p.pid = 4242;
  p.ppid = 1;
  p.wall_start_ns = 1764400000123456789ull;
  p.mono_start_ns = 987654321;
  p.host = "node7";
  p.argv = {"python", "train.py", "--lr", "0.1", ""};
  return p;
}

TEST(RecordCodec, EveryRecordTypeRoundTripsFieldForField) {
  TraceBytes trace;
  AllocRecord alloc = test::alloc_at(1000, 1, 0x7f0000200000, 1 << 20, MemoryKind::kVmmPhysical);
  alloc.api = Api::kCuMemCreate;
  FreeRecord free_rec = test::free_at(900, 0x7f0000200000);  // time may go backwards
  AllocFailedRecord failed;
  failed.time_ns = 5000000000ull;
  failed.thread = 7;
  failed.device = -1;
  failed.kind = MemoryKind::kHostPinned;
  failed.api = Api::kCuMemHostAlloc;
  failed.size = 1ull << 40;
  failed.error = 2;
  EndRecord end;
  end.time_ns = 5000000001ull;
  trace.add(sample_process()).add(alloc).add(free_rec).add(failed).add(end);

  RecordDecoder decoder(trace.bytes(), 0);
  auto p = decoder.next();
  ASSERT_TRUE(p && std::holds_alternative<ProcessInfoRecord>(*p));
  const auto& pi = std::get<ProcessInfoRecord>(*p);
  EXPECT_EQ(pi.pid, 4242u);
  EXPECT_EQ(pi.ppid, 1u);
  EXPECT_EQ(pi.wall_start_ns, 1764400000123456789ull);
  EXPECT_EQ(pi.mono_start_ns, 987654321u);
  EXPECT_EQ(pi.host, "node7");
  EXPECT_EQ(pi.argv, sample_process().argv);

  auto a = decoder.next();
  ASSERT_TRUE(a && std::holds_alternative<AllocRecord>(*a));
  const auto& ar = std::get<AllocRecord>(*a);
  EXPECT_EQ(ar.time_ns, 1000u);
  EXPECT_EQ(ar.device, 1);
  EXPECT_EQ(ar.kind, MemoryKind::kVmmPhysical);
  EXPECT_EQ(ar.api, Api::kCuMemCreate);
  EXPECT_EQ(ar.address, 0x7f0000200000u);
  EXPECT_EQ(ar.size, 1u << 20);

  auto f = decoder.next();
  ASSERT_TRUE(f && std::holds_alternative<FreeRecord>(*f));
  EXPECT_EQ(std::get<FreeRecord>(*f).time_ns, 900u);
  EXPECT_EQ(std::get<FreeRecord>(*f).address, 0x7f0000200000u);
  EXPECT_EQ(std::get<FreeRecord>(*f).api, Api::kCuMemFree);

  auto x = decoder.next();
  ASSERT_TRUE(x && std::holds_alternative<AllocFailedRecord>(*x));
  const auto& fr = std::get<AllocFailedRecord>(*x);
  EXPECT_EQ(fr.time_ns, 5000000000ull);
  EXPECT_EQ(fr.device, -1);
  EXPECT_EQ(fr.kind, MemoryKind::kHostPinned);
  EXPECT_EQ(fr.api, Api::kCuMemHostAlloc);
  EXPECT_EQ(fr.size, 1ull << 40);
  EXPECT_EQ(fr.error, 2u);

  auto e = decoder.next();
  ASSERT_TRUE(e && std::holds_alternative<EndRecord>(*e));
  EXPECT_EQ(std::get<EndRecord>(*e).time_ns, 5000000001ull);

  EXPECT_FALSE(decoder.next());
  EXPECT_EQ(decoder.status().end, StreamEnd::kClean);
  EXPECT_EQ(decoder.status().offset, trace.bytes().size());
}

// 3.1 appended public_api to the event records. A 3.0 record (without it) and an id from a newer
// writer both read as "unknown": the name is a label, never a reason to drop the event.
TEST(RecordCodec, PublicApiRoundTripsAndIsOptional) {
  TraceBytes trace;
  FreeRecord named = test::free_at(5, 0x10);
  named.public_api = Api::kCudaFreeAsync;
  trace.add(named);
  RecordDecoder decoder(trace.bytes(), 0);
  const auto round_trip = std::get<FreeRecord>(*decoder.next());
  EXPECT_EQ(round_trip.api, Api::kCuMemFree);
  EXPECT_EQ(round_trip.public_api, Api::kCudaFreeAsync);

  // type 3 (Free), length, time 0, api cuMemFree (2), address +16 (zigzag 32).
  const std::vector<uint8_t> version_3_0 = {0x03, 0x03, 0x00, 0x02, 0x20};
  RecordDecoder old(version_3_0, 0);
  const auto o = std::get<FreeRecord>(*old.next());
  EXPECT_EQ(o.api, Api::kCuMemFree);
  EXPECT_EQ(o.address, 0x10u);
  EXPECT_EQ(o.public_api, Api::kUnknown);
  EXPECT_FALSE(old.next());
  EXPECT_EQ(old.status().end, StreamEnd::kClean);

  // The same with public_api 9999, an id this build does not know.
  const std::vector<uint8_t> newer = {0x03, 0x05, 0x00, 0x02, 0x20, 0x8F, 0x4E};
  RecordDecoder unknown(newer, 0);
  const auto u = std::get<FreeRecord>(*unknown.next());
  EXPECT_EQ(u.address, 0x10u);
  EXPECT_EQ(u.public_api, Api::kUnknown);
  EXPECT_FALSE(unknown.next());
  EXPECT_EQ(unknown.status().end, StreamEnd::kClean);
}

TEST(RecordCodec, ContextAndVmmRecordsRoundTrip) {
  TraceBytes trace;
  ContextRecord ctx;
  ctx.time_ns = 10;
  ctx.id = 3;
  ctx.handle = 0x55aa00001000;
  ctx.device = 1;
  ContextDestroyedRecord gone;
  gone.time_ns = 20;
  gone.thread = 9;
  gone.id = 3;
  gone.api = Api::kCuDevicePrimaryCtxReset;
  MapRecord map;
  map.time_ns = 30;
  map.thread = 9;
  map.device = -1;
  map.address = 0x400000200000;
  map.size = 20 << 20;
  map.offset = 2 << 20;
  map.handle = 0xdeadbeef;
  UnmapRecord unmap;
  unmap.time_ns = 40;
  unmap.address = 0x400000200000;
  unmap.size = 40 << 20;
  RetainHandleRecord retain;
  retain.time_ns = 50;
  retain.handle = 0xdeadbeef;
  trace.add(sample_process()).add(ctx).add(gone).add(map).add(unmap).add(retain);

  RecordDecoder decoder(trace.bytes(), 0);
  ASSERT_TRUE(decoder.next());
  const auto c = std::get<ContextRecord>(*decoder.next());
  EXPECT_EQ(c.time_ns, 10u);
  EXPECT_EQ(c.id, 3u);
  EXPECT_EQ(c.handle, 0x55aa00001000u);
  EXPECT_EQ(c.device, 1);
  const auto g = std::get<ContextDestroyedRecord>(*decoder.next());
  EXPECT_EQ(g.time_ns, 20u);
  EXPECT_EQ(g.id, 3u);
  EXPECT_EQ(g.api, Api::kCuDevicePrimaryCtxReset);
  const auto m = std::get<MapRecord>(*decoder.next());
  EXPECT_EQ(m.time_ns, 30u);
  EXPECT_EQ(m.device, -1);
  EXPECT_EQ(m.address, 0x400000200000u);
  EXPECT_EQ(m.size, 20u << 20);
  EXPECT_EQ(m.offset, 2u << 20);
  EXPECT_EQ(m.handle, 0xdeadbeefu);
  const auto u = std::get<UnmapRecord>(*decoder.next());
  EXPECT_EQ(u.time_ns, 40u);
  EXPECT_EQ(u.address, 0x400000200000u);
  EXPECT_EQ(u.size, 40u << 20);
  const auto r = std::get<RetainHandleRecord>(*decoder.next());
  EXPECT_EQ(r.time_ns, 50u);
  EXPECT_EQ(r.handle, 0xdeadbeefu);
  EXPECT_FALSE(decoder.next());
  EXPECT_EQ(decoder.status().end, StreamEnd::kClean);
}

TEST(RecordCodec, ATrainingLoopsEventsAverageAtMost16Bytes) {
  // The budget is 16 bytes per event on average, stacks excluded. A caching allocator's pattern:
  // a few sizes, addresses that come back, microseconds apart, a handful of threads.
  CodecState state;
  GrowableBuffer out;
  const uint64_t base = 0x7f3a00000000;
  const uint64_t sizes[] = {2 << 20, 20 << 20, 512, 1 << 30, 64 << 10};
  uint64_t t = 0;
  std::size_t events = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t address = base + static_cast<uint64_t>(i % 37) * (32 << 20);
    t += 1000 + static_cast<uint64_t>(i % 7) * 3000;
    AllocRecord a = test::alloc_at(t, 0, address, sizes[i % 5]);
    a.thread = 31000 + static_cast<uint64_t>(i % 4);
    encode_record(a, state, out);
    t += 20000;
    FreeRecord f = test::free_at(t, address);
    f.thread = a.thread;
    encode_record(f, state, out);
    events += 2;
  }
  const double average = static_cast<double>(out.size()) / static_cast<double>(events);
  EXPECT_LE(average, 16.0) << average;
}

// The traced process encodes its events in place (encode_record_at, through put_varints): the
// bytes and the codec state after them must be those of the framed encoder the reader's tests
// use, at every varint length from one byte to ten, times going backwards, addresses going down.
TEST(RecordCodec, InPlaceEncodingWritesTheFramedEncodersBytes) {
  CodecState in_place_state;
  CodecState framed_state;
  std::vector<uint8_t> in_place;
  GrowableBuffer framed;
  const auto both = [&](const auto& rec) {
    using R = std::decay_t<decltype(rec)>;
    uint8_t room[max_record_bytes<R>()];
    const std::size_t size = encode_record_at(rec, in_place_state, room);
    ASSERT_GT(size, 0u);
    in_place.insert(in_place.end(), room, room + size);
    encode_record(rec, framed_state, framed);
  };
  const uint64_t values[] = {0,
                             1,
                             127,
                             128,
                             16383,
                             16384,
                             (1ull << 35) - 1,
                             (1ull << 49),
                             (1ull << 56) - 1,
                             1ull << 56,
                             (1ull << 63) + 5,
                             std::numeric_limits<uint64_t>::max()};
  uint64_t time = 1'000'000;
  for (std::size_t i = 0; i < std::size(values); ++i) {
    const uint64_t v = values[i];
    BlockRecord block;
    block.time_ns = time;
    block.allocator = static_cast<uint32_t>(v);
    block.action = static_cast<uint32_t>(BlockAction::kFreeRequested);
    block.device = i % 2 == 0 ? -1 : static_cast<int32_t>(v);
    block.address = values[std::size(values) - 1 - i];
    block.size = v;
    block.stream = v ^ 0x5555;
    block.stack = static_cast<uint32_t>(v >> 3);
    both(block);
    time = i % 3 == 0 ? time - 700 : time + v % 100000;  // threads' clocks, read out of order
    AllocRecord alloc = test::alloc_at(time, 3, v, ~v);
    alloc.context = static_cast<uint32_t>(v);
    both(alloc);
    both(test::free_at(time, v / 3));
  }
  ASSERT_EQ(in_place.size(), framed.size());
  EXPECT_TRUE(std::equal(in_place.begin(), in_place.end(), framed.data()));
  EXPECT_EQ(in_place_state.last_time_ns, framed_state.last_time_ns);
  EXPECT_EQ(in_place_state.last_address, framed_state.last_address);
}

// 4.6: a caching allocator's settings, with the unlimited split size (2^64 - 1, ten varint
// bytes) and divisions that go down as well as up (the list is delta-coded).
TEST(RecordCodec, AllocatorSettingsRoundTrip) {
  AllocatorSettingsRecord settings;
  settings.time_ns = 77;
  settings.allocator = static_cast<uint32_t>(BlockAllocator::kPytorch);
  settings.max_split_size = UINT64_MAX;
  settings.roundup_divisions = {1, 1, 8, 8, 4, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 16};
  AllocatorSettingsRecord limited = settings;
  limited.time_ns = 78;
  limited.max_split_size = 64ull << 20;
  limited.roundup_divisions.assign(AllocatorSettingsRecord::kIntervals, 0);
  TraceBytes trace;
  trace.add(settings).add(limited);
  RecordDecoder decoder(trace.bytes(), 0);
  for (const AllocatorSettingsRecord* want : {&settings, &limited}) {
    auto r = decoder.next();
    ASSERT_TRUE(r && std::holds_alternative<AllocatorSettingsRecord>(*r));
    const auto& got = std::get<AllocatorSettingsRecord>(*r);
    EXPECT_EQ(got.time_ns, want->time_ns);
    EXPECT_EQ(got.allocator, 1u);
    EXPECT_EQ(got.max_split_size, want->max_split_size);
    EXPECT_EQ(got.roundup_divisions, want->roundup_divisions);
  }
  EXPECT_FALSE(decoder.next());
  EXPECT_EQ(decoder.status().end, StreamEnd::kClean);
}

// 4.10: the signal that ended the process, field for field (a negative si_code included).
TEST(RecordCodec, SignalRecordRoundTrips) {
  TraceBytes trace;
  SignalRecord s;
  s.time_ns = 123456789;
  s.signal = 11;
  s.code = -6;  // SI_TKILL
  s.address = 0xdeadbeef000;
  s.sender = 4242;
  trace.add(sample_process()).add(s);
  RecordDecoder decoder(trace.bytes(), 0, 77);
  ASSERT_TRUE(decoder.next());
  auto r = decoder.next();
  ASSERT_TRUE(r && std::holds_alternative<SignalRecord>(*r));
  const auto& got = std::get<SignalRecord>(*r);
  EXPECT_EQ(got.time_ns, 123456789u);
  EXPECT_EQ(got.signal, 11u);
  EXPECT_EQ(got.code, -6);
  EXPECT_EQ(got.address, 0xdeadbeef000u);
  EXPECT_EQ(got.sender, 4242u);
  EXPECT_EQ(got.thread, 77u);
  EXPECT_FALSE(decoder.next());
}

TEST(RecordCodec, UnknownRecordTypesAreSkipped) {
  TraceBytes trace;
  trace.add(sample_process());
  // A record type from a future minor version: type 99, 3-byte payload.
  for (uint8_t b : {uint8_t{99}, uint8_t{3}, uint8_t{1}, uint8_t{2}, uint8_t{3}})
    trace.bytes().push_back(b);
  trace.add(test::alloc_at(10, 0, 0x1000, 64));
  RecordDecoder decoder(trace.bytes(), 0);
  ASSERT_TRUE(decoder.next());
  auto a = decoder.next();
  ASSERT_TRUE(a && std::holds_alternative<AllocRecord>(*a));
  EXPECT_EQ(std::get<AllocRecord>(*a).address, 0x1000u);
  EXPECT_FALSE(decoder.next());
  EXPECT_EQ(decoder.status().end, StreamEnd::kClean);
  EXPECT_EQ(decoder.unknown_records_skipped(), 1u);
}

TEST(RecordCodec, ATornLastRecordIsReportedAsTruncatedAtItsStart) {
  TraceBytes trace;
  trace.add(sample_process()).add(test::alloc_at(10, 0, 0x1000, 64));
  const std::size_t last_start = trace.bytes().size();
  trace.add(test::alloc_at(20, 0, 0x2000, 64));
  for (std::size_t cut = last_start + 1; cut < trace.bytes().size(); ++cut) {
    std::vector<uint8_t> bytes(trace.bytes().begin(), trace.bytes().begin() + cut);
    RecordDecoder decoder(bytes, 0);
    ASSERT_TRUE(decoder.next());
    ASSERT_TRUE(decoder.next());
    EXPECT_FALSE(decoder.next()) << "cut at " << cut;
    EXPECT_EQ(decoder.status().end, StreamEnd::kTruncated) << "cut at " << cut;
    EXPECT_EQ(decoder.status().offset, last_start);
  }
}

TEST(RecordCodec, ZeroFilledTailIsTruncationNotCorruption) {
  TraceBytes trace;
  trace.add(sample_process());
  const std::size_t end = trace.bytes().size();
  trace.bytes().resize(end + 64, 0);
  RecordDecoder decoder(trace.bytes(), 0);
  ASSERT_TRUE(decoder.next());
  EXPECT_FALSE(decoder.next());
  EXPECT_EQ(decoder.status().end, StreamEnd::kTruncated);
  EXPECT_EQ(decoder.status().offset, end);
}

TEST(RecordCodec, AnImpossibleValueStopsReadingWithTheReason) {
  TraceBytes trace;
  trace.add(sample_process());
  const std::size_t bad_start = trace.bytes().size();
  trace.add(test::alloc_at(10, 0, 0x1000, 64));
  // Fields: type, length, time, device, kind: make the kind 200.
  trace.bytes()[bad_start + 4] = 200;
  trace.add(test::alloc_at(20, 0, 0x2000, 64));
  RecordDecoder decoder(trace.bytes(), 0);
  ASSERT_TRUE(decoder.next());
  EXPECT_FALSE(decoder.next());
  EXPECT_EQ(decoder.status().end, StreamEnd::kCorrupt);
  EXPECT_EQ(decoder.status().offset, bad_start);
  EXPECT_NE(decoder.status().reason.find("unknown memory kind 200"), std::string::npos)
      << decoder.status().reason;
}

TEST(RecordCodec, AStringLongerThanItsRecordIsCorruption) {
  TraceBytes trace;
  ProcessInfoRecord p = sample_process();
  p.argv.clear();
  p.host = "abc";
  trace.add(p);
  // Layout: type(1), length(1), pid(2), ppid(1), wall(9), mono(5), host length...
  std::vector<uint8_t>& b = trace.bytes();
  const std::size_t host_len = 1 + 1 + 2 + 1 + 9 + 5;
  ASSERT_EQ(b[host_len], 3);
  b[host_len] = 100;
  RecordDecoder decoder(b, 0);
  EXPECT_FALSE(decoder.next());
  EXPECT_EQ(decoder.status().end, StreamEnd::kCorrupt);
  EXPECT_NE(decoder.status().reason.find("runs past the record"), std::string::npos)
      << decoder.status().reason;
}

// Fields are read with 8-byte loads while 8 bytes remain in the payload, and byte by byte in
// the last 8. Records of every length ending at every distance from the end of an exactly
// sized buffer (the sanitizer build catches a load past it) decode to the same values.
TEST(RecordCodec, RecordsNearThePayloadsEndDecodeTheSame) {
  for (uint64_t address : {0x10ull, 0x7f00'0000'1000ull, 0xffff'ffff'ffff'fff0ull}) {
    for (uint64_t size : {1ull, 300ull, 1ull << 40, ~0ull}) {
      TraceBytes trace;
      AllocRecord a = test::alloc_at(123456789, 3, address, size);
      a.stack = 70000;
      trace.add(a);
      FreeRecord f;
      f.time_ns = 123456790;
      f.address = address;
      trace.add(f);
      const std::vector<uint8_t> exact(trace.bytes().begin(), trace.bytes().end());
      RecordDecoder decoder(exact, 0);
      const auto first = decoder.next();
      const auto second = decoder.next();
      ASSERT_TRUE(first && second);
      const auto& got = std::get<AllocRecord>(*first);
      EXPECT_EQ(got.time_ns, 123456789u);
      EXPECT_EQ(got.device, 3);
      EXPECT_EQ(got.address, address);
      EXPECT_EQ(got.size, size);
      EXPECT_EQ(got.stack, 70000u);
      EXPECT_EQ(std::get<FreeRecord>(*second).address, address);
      EXPECT_FALSE(decoder.next());
      EXPECT_EQ(decoder.status().end, StreamEnd::kClean);
    }
  }
}

// A varint that runs past its record's end is corruption even when the bytes after it (the
// next record's) would complete it and 8 bytes can be loaded at once.
TEST(RecordCodec, AVarintRunningPastItsRecordIsCorruption) {
  TraceBytes trace;
  trace.add(test::alloc_at(10, 0, 0x1000, 1ull << 30));  // size: a 5-byte varint
  trace.add(test::alloc_at(20, 0, 0x2000, 64));
  trace.add(test::alloc_at(30, 0, 0x3000, 64));
  std::vector<uint8_t>& b = trace.bytes();
  // Frame: type, length, then the fields. Cut the first record's length so that it ends in
  // the middle of its size field: time(1) device(1) kind(1) api(1) address(2) size(5)...
  ASSERT_LT(b[1], 0x80);
  b[1] = static_cast<uint8_t>(1 + 1 + 1 + 1 + 2 + 3);
  // Reading must stop at the first record, which is corrupt (what the bytes cut off from it
  // would parse as does not matter).
  RecordDecoder decoder(b, 0);
  EXPECT_FALSE(decoder.next());
  EXPECT_EQ(decoder.status().end, StreamEnd::kCorrupt);
  EXPECT_EQ(decoder.status().offset, 0u);
  EXPECT_NE(decoder.status().reason.find("bad or missing integer field"), std::string::npos)
      << decoder.status().reason;
}

}  // namespace
}  // namespace gmt::format
