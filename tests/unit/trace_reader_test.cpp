#include "format/trace_reader.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/unit/chunked_file.h"
#include "tests/unit/trace_bytes.h"

namespace gmt::format {
namespace {

using test::alloc_at;
using test::ChunkedFile;
using test::free_at;

ProcessInfoRecord process() {
  ProcessInfoRecord p;
  p.pid = 7;
  return p;
}

std::vector<Record> read_all(TraceReader& reader) {
  std::vector<Record> out;
  while (auto r = reader.next()) out.push_back(std::move(*r));
  return out;
}

FileHeader header_of(const std::vector<uint8_t>& bytes) {
  return check_header(bytes).header;
}

TEST(TraceReader, MergesWritersInTimeOrderAndTagsEachRecordWithItsThread) {
  ChunkedFile file;
  // Writer 0 (thread 100) frees at 30 what writer 1 (thread 200) reuses at 30: the free first.
  file.add_chunk(0, 0, 100, process(), alloc_at(10, 0, 0xa000, 64), free_at(30, 0xa000));
  file.add_chunk(1, 0, 200, alloc_at(20, 0, 0xb000, 8), alloc_at(30, 0, 0xa000, 16));
  file.add_chunk(0, 1, 100, alloc_at(40, 0, 0xc000, 1));  // writer 0's second chunk
  TraceReader reader(file.bytes(), header_of(file.bytes()));
  const std::vector<Record> records = read_all(reader);
  ASSERT_EQ(records.size(), 6u);
  EXPECT_TRUE(std::holds_alternative<ProcessInfoRecord>(records[0]));
  const std::vector<uint64_t> times = {0, 10, 20, 30, 30, 40};
  for (std::size_t i = 0; i < records.size(); ++i)
    EXPECT_EQ(record_time(records[i]), times[i]) << i;
  EXPECT_TRUE(std::holds_alternative<FreeRecord>(records[3]));
  EXPECT_EQ(std::get<AllocRecord>(records[4]).size, 16u);
  EXPECT_EQ(std::get<AllocRecord>(records[1]).thread, 100u);
  EXPECT_EQ(std::get<AllocRecord>(records[2]).thread, 200u);
  EXPECT_EQ(std::get<AllocRecord>(records[5]).thread, 100u);
  EXPECT_TRUE(reader.problems().empty());
  EXPECT_EQ(reader.chunk_count(), 3u);
}

// Each chunk is given back once checked and once read, and only then: a reader that keeps few
// pages resident, whatever the size of the trace.
TEST(TraceReader, ReleasesEachChunkOnceCheckedAndOnceRead) {
  ChunkedFile file;
  const uint64_t a = file.add_chunk(0, 0, 100, process(), alloc_at(10, 0, 0xa000, 64));
  const uint64_t b = file.add_chunk(1, 0, 200, alloc_at(20, 0, 0xb000, 8));
  const uint64_t c = file.add_chunk(0, 1, 100, alloc_at(40, 0, 0xc000, 1));
  const uint64_t chunk = header_of(file.bytes()).chunk_size;
  std::vector<std::pair<uint64_t, uint64_t>> released;
  TraceReader reader(file.bytes(), header_of(file.bytes()), [&](uint64_t offset, uint64_t length) {
    released.emplace_back(offset, length);
  });
  // The scan checks all three, in file order.
  EXPECT_EQ(released,
            (std::vector<std::pair<uint64_t, uint64_t>>{{a, chunk}, {b, chunk}, {c, chunk}}));
  ASSERT_EQ(read_all(reader).size(), 4u);
  // Then each is read to its end: writer 0's first chunk before its second; writer 1's.
  ASSERT_EQ(released.size(), 6u);
  std::vector<std::pair<uint64_t, uint64_t>> read(released.begin() + 3, released.end());
  std::sort(read.begin(), read.end());
  EXPECT_EQ(read, (std::vector<std::pair<uint64_t, uint64_t>>{{a, chunk}, {b, chunk}, {c, chunk}}));
  EXPECT_LT(std::find(released.begin() + 3, released.end(), std::make_pair(a, chunk)),
            std::find(released.begin() + 3, released.end(), std::make_pair(c, chunk)));
}

TEST(TraceReader, AFlippedByteLosesOnlyItsChunkAndSaysWhere) {
  ChunkedFile file;
  file.add_chunk(0, 0, 100, process(), alloc_at(10, 0, 0xa000, 64));
  const uint64_t damaged = file.add_chunk(1, 0, 200, alloc_at(20, 0, 0xb000, 8));
  file.bytes()[damaged + kChunkHeaderSize + 3] ^= 0x40;
  TraceReader reader(file.bytes(), header_of(file.bytes()));
  const std::vector<Record> records = read_all(reader);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(std::get<AllocRecord>(records[1]).address, 0xa000u);
  ASSERT_EQ(reader.problems().size(), 1u);
  EXPECT_EQ(reader.problems()[0].kind, ReadProblem::Kind::kCorrupt);
  EXPECT_EQ(reader.problems()[0].offset, damaged);
  EXPECT_EQ(reader.problems()[0].reason,
            "checksum mismatch in a chunk of thread 200; its records are lost");
}

TEST(TraceReader, ACutFileKeepsEveryCompleteChunk) {
  ChunkedFile file;
  file.add_chunk(0, 0, 100, process(), alloc_at(10, 0, 0xa000, 64));
  const uint64_t last = file.add_chunk(1, 0, 200, alloc_at(20, 0, 0xb000, 8));
  file.bytes().resize(last + kChunkHeaderSize + 2);  // inside the last chunk's payload
  TraceReader reader(file.bytes(), header_of(file.bytes()));
  EXPECT_EQ(read_all(reader).size(), 2u);
  ASSERT_EQ(reader.problems().size(), 1u);
  EXPECT_EQ(reader.problems()[0].kind, ReadProblem::Kind::kTruncated);
  EXPECT_EQ(reader.problems()[0].offset, last);
}

TEST(TraceReader, UnusedChunksAndUnpublishedBytesAreNotRecords) {
  ChunkedFile file;
  const uint64_t first = file.add_chunk(0, 0, 100, process(), alloc_at(10, 0, 0xa000, 64));
  file.add_empty_chunk();
  // Bytes written past the published length (a record being written when the process died).
  file.bytes()[first + kChunkHeaderSize + 200] = 0x02;
  file.bytes()[first + kChunkHeaderSize + 201] = 0x05;
  TraceReader reader(file.bytes(), header_of(file.bytes()));
  EXPECT_EQ(read_all(reader).size(), 2u);
  EXPECT_TRUE(reader.problems().empty());
  EXPECT_EQ(reader.chunk_count(), 1u);
}

TEST(TraceReader, ADamagedChunkHeaderIsSkipped) {
  ChunkedFile file;
  file.add_chunk(0, 0, 100, process());
  const uint64_t bad = file.add_chunk(1, 0, 200, alloc_at(20, 0, 0xb000, 8));
  file.bytes()[bad] = 'X';
  TraceReader reader(file.bytes(), header_of(file.bytes()));
  EXPECT_EQ(read_all(reader).size(), 1u);
  ASSERT_EQ(reader.problems().size(), 1u);
  EXPECT_EQ(reader.problems()[0].offset, bad);
  EXPECT_EQ(reader.problems()[0].reason, "damaged chunk header (bad magic); its records are lost");
}

}  // namespace
}  // namespace gmt::format
