// SPDX-License-Identifier: Apache-2.0
// The hand-written encoders behind `gpumemtrace export`: protobuf varints and fields (pprof),
// pickle opcodes (memviz) and gzip, byte for byte.
#include <gtest/gtest.h>
#include <zlib.h>

#include <functional>
#include <sstream>
#include <string>

#include "analyzer/export/gzip.h"
#include "analyzer/export/pickle_writer.h"
#include "analyzer/export/protobuf_writer.h"

namespace gmt::analyzer {
namespace {

std::string varint(uint64_t v) {
  std::string out;
  append_varint(out, v);
  return out;
}

TEST(ProtobufVarint, EncodesSevenBitGroupsLeastSignificantFirst) {
  EXPECT_EQ(varint(0), std::string(1, '\0'));
  EXPECT_EQ(varint(1), "\x01");
  EXPECT_EQ(varint(127), "\x7f");
  EXPECT_EQ(varint(128), "\x80\x01");
  EXPECT_EQ(varint(300), "\xac\x02");
  EXPECT_EQ(varint(UINT64_MAX), "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01");
  // An int64 of -1, as protobuf writes it: ten bytes.
  EXPECT_EQ(varint(static_cast<uint64_t>(int64_t{-1})).size(), 10u);
}

TEST(ProtobufWriter, WritesKeysLengthsAndPackedRuns) {
  ProtoWriter inner;
  inner.varint(1, 150);  // field 1, wire type 0: key 0x08
  EXPECT_EQ(inner.data(), "\x08\x96\x01");
  ProtoWriter outer;
  outer.bytes(6, "ab");  // field 6, wire type 2: key 0x32, length 2
  outer.message(3, inner);
  outer.packed(2, {3, 270});
  outer.packed(5, {});  // an empty repeated field is left out
  EXPECT_EQ(outer.data(), std::string("\x32\x02"
                                      "ab"
                                      "\x1a\x03\x08\x96\x01"
                                      "\x12\x03\x03\x8e\x02"));
}

std::string pickled(const std::function<void(PickleWriter&)>& write) {
  std::ostringstream out;
  PickleWriter p(out);
  write(p);
  p.finish();
  return out.str();
}

// BINUNICODE of a one-character string: 'X', its length in four bytes, the character.
std::string key(const char* one) {
  return std::string("X\x01\x00\x00\x00", 5) + one;
}

TEST(PickleWriter, WritesProtocolTwoOpcodes) {
  const std::string bytes = pickled([](PickleWriter& p) {
    p.begin_dict();
    p.string("a");
    p.begin_list();
    p.integer(int64_t{7});
    p.integer(int64_t{300});
    p.integer(int64_t{-2});
    p.integer(int64_t{1} << 40);
    p.integer(UINT64_MAX);
    p.end_list();
    p.string("b");
    p.none();
    p.string("c");
    p.boolean(true);
    p.end_dict();
  });
  const std::string expected = std::string("\x80\x02") +                        // PROTO 2
                               "}(" +                                           // EMPTY_DICT, MARK
                               key("a") +                                       // BINUNICODE "a"
                               "](" +                                           // EMPTY_LIST, MARK
                               "K\x07" +                                        // BININT1 7
                               "M\x2c\x01" +                                    // BININT2 300
                               "J\xfe\xff\xff\xff" +                            // BININT -2
                               "\x8a\x06" + std::string("\0\0\0\0\0\x01", 6) +  // LONG1 2^40
                               "\x8a\x09" + std::string(8, '\xff') + std::string(1, '\0') +
                               "e" +                // APPENDS
                               key("b") + "N" +     // None
                               key("c") + "\x88" +  // NEWTRUE
                               "u" +                // SETITEMS
                               ".";                 // STOP
  EXPECT_EQ(bytes, expected);
}

TEST(PickleWriter, BatchesLongListsAndMemoizes) {
  const std::string bytes = pickled([](PickleWriter& p) {
    p.begin_list();
    for (int i = 0; i < 1001; ++i) p.integer(int64_t{0});
    p.begin_list();
    p.end_list(5);
    p.get(5);
    p.end_list();
  });
  std::string expected = "\x80\x02](";
  for (int i = 0; i < 1000; ++i) expected += std::string("K\0", 2);
  expected += "e(";  // the first batch appended, a new one marked
  expected += std::string("K\0", 2);
  expected += "](e";                                // the inner list, empty
  expected += std::string("r\x05\x00\x00\x00", 5);  // LONG_BINPUT 5
  expected += std::string("j\x05\x00\x00\x00", 5);  // LONG_BINGET 5
  expected += "e.";
  EXPECT_EQ(bytes, expected);
}

TEST(PickleWriter, ReplacesInvalidUtf8) {
  const std::string bytes = pickled([](PickleWriter& p) { p.string("a\xff\xc3\xa9"); });
  EXPECT_EQ(bytes, std::string("\x80\x02X\x06\x00\x00\x00"
                               "a\xef\xbf\xbd\xc3\xa9.",
                               14));
}

TEST(PickleWriter, RefusesUnbalancedContainers) {
  std::ostringstream out;
  PickleWriter p(out);
  p.begin_dict();
  p.string("key");
  EXPECT_THROW(p.end_dict(), std::logic_error);
  PickleWriter q(out);
  q.begin_list();
  EXPECT_THROW(q.finish(), std::logic_error);
}

TEST(Gzip, RoundTripsThroughZlibWithAGzipHeader) {
  std::string data;
  for (int i = 0; i < 10000; ++i) data += std::to_string(i) + ",";
  const std::string packed = gzip(data);
  ASSERT_GE(packed.size(), 18u);
  EXPECT_EQ(static_cast<uint8_t>(packed[0]), 0x1f);  // the gzip magic
  EXPECT_EQ(static_cast<uint8_t>(packed[1]), 0x8b);
  z_stream z{};
  ASSERT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string back(data.size() + 16, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
  z.avail_in = static_cast<uInt>(packed.size());
  z.next_out = reinterpret_cast<Bytef*>(back.data());
  z.avail_out = static_cast<uInt>(back.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  back.resize(z.total_out);
  inflateEnd(&z);
  EXPECT_EQ(back, data);
}

}  // namespace
}  // namespace gmt::analyzer
