// SPDX-License-Identifier: Apache-2.0
#include "format/trace_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/unit/chunked_file.h"
#include "tests/unit/trace_bytes.h"

namespace gmt::format {
namespace {

using test::alloc_at;
using test::ChunkedFile;
using test::free_at;
using test::process_record;

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
  file.add_chunk(0, 0, 100, process_record(), alloc_at(10, 0, 0xa000, 64), free_at(30, 0xa000));
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

// Allocations of different writers at the same nanosecond come out by writer: a defined order,
// whatever the merge does inside. Five writers (not a power of two), listed out of order.
TEST(TraceReader, TiesBetweenWritersComeOutInWriterOrder) {
  ChunkedFile file;
  file.add_chunk(3, 0, 300, alloc_at(50, 0, 0x3000, 3));
  file.add_chunk(0, 0, 100, process_record(), alloc_at(50, 0, 0x1000, 1),
                 alloc_at(60, 0, 0x1100, 11));
  file.add_chunk(4, 0, 400, free_at(50, 0x1000), alloc_at(50, 0, 0x4000, 4));
  file.add_chunk(1, 0, 150, alloc_at(50, 0, 0x2000, 2));
  file.add_chunk(2, 0, 200, alloc_at(60, 0, 0x2100, 12));
  TraceReader reader(file.bytes(), header_of(file.bytes()));
  const std::vector<Record> records = read_all(reader);
  ASSERT_EQ(records.size(), 8u);
  // At 50 writer 4's free (rank 1) before every allocation; then writers 0, 1, 3, 4 (by writer
  // id, not by position in the file), then 60: writers 0 and 2.
  EXPECT_TRUE(std::holds_alternative<FreeRecord>(records[1]));
  std::vector<uint64_t> sizes;
  for (const Record& r : records) {
    if (const auto* a = std::get_if<AllocRecord>(&r)) sizes.push_back(a->size);
  }
  EXPECT_EQ(sizes, (std::vector<uint64_t>{1, 2, 3, 4, 11, 12}));
}

// Many writers with interleaved times: the merge gives exactly the records sorted by (time,
// writer), each writer's own order kept.
TEST(TraceReader, MergesManyWritersLikeASort) {
  ChunkedFile file(1 << 16);
  constexpr uint32_t kWriters = 13;
  std::vector<std::pair<uint64_t, uint64_t>> expected;  // (time, size)
  uint64_t seed = 12345;
  for (uint32_t w = 0; w < kWriters; ++w) {
    std::vector<AllocRecord> allocs;
    uint64_t t = 0;
    for (int i = 0; i < 40; ++i) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      t += (seed >> 60) % 4;  // repeats times, within and across writers
      allocs.push_back(alloc_at(t, 0, 0x100000ull * (w + 1) + 0x100ull * i, w * 1000 + i));
      expected.emplace_back(t, w * 1000 + i);
    }
    std::apply([&](const auto&... r) { file.add_chunk(w, 0, w, r...); },
               [&]<std::size_t... I>(std::index_sequence<I...>) {
                 return std::make_tuple(allocs[I]...);
               }(std::make_index_sequence<40>()));
  }
  std::stable_sort(expected.begin(), expected.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second / 1000 < b.second / 1000;
  });
  TraceReader reader(file.bytes(), header_of(file.bytes()));
  const std::vector<Record> records = read_all(reader);
  ASSERT_EQ(records.size(), expected.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& a = std::get<AllocRecord>(records[i]);
    EXPECT_EQ(a.time_ns, expected[i].first) << i;
    EXPECT_EQ(a.size, expected[i].second) << i;
  }
}

// What tells two records apart here: their type, time and size or address.
std::string signature(const Record& r) {
  if (const auto* a = std::get_if<AllocRecord>(&r)) {
    return "alloc " + std::to_string(a->time_ns) + " " + std::to_string(a->size) + " thread " +
           std::to_string(a->thread);
  }
  if (const auto* f = std::get_if<FreeRecord>(&r)) {
    return "free " + std::to_string(f->time_ns) + " " + std::to_string(f->address);
  }
  return "record of type " + std::to_string(r.index() + 1) + " at " +
         std::to_string(record_time(r));
}

// Every record, in batches of at most `out` events, as signatures; each batch's events looked
// at only once the whole batch is in (they stay valid until the next call). The batches' shapes
// go to `shapes` when given: "3+" for three events then a record of another type.
std::vector<std::string> read_in_batches(TraceReader& reader, std::size_t out,
                                         std::vector<std::string>* shapes = nullptr) {
  std::vector<const MemoryEvent*> events(out);
  std::vector<std::string> given;
  while (true) {
    const TraceReader::Batch batch = reader.next_batch(events);
    if (batch.events == 0 && batch.other == nullptr) break;
    if (shapes != nullptr) {
      shapes->push_back(std::to_string(batch.events) + (batch.other != nullptr ? "+" : ""));
    }
    for (std::size_t i = 0; i < batch.events; ++i) {
      Record record;
      to_record(*events[i], record);
      given.push_back(signature(record));
    }
    if (batch.other != nullptr) given.push_back(signature(*batch.other));
  }
  return given;
}

std::vector<std::string> read_one_at_a_time(TraceReader& reader) {
  std::vector<std::string> given;
  while (const Record* r = reader.next_record()) given.push_back(signature(*r));
  return given;
}

// A batch is the allocations and frees up to the next record of another type, which comes with
// it, and no more events than asked for (a full batch leaves that record to the next).
TEST(TraceReader, ABatchEndsAtARecordOfAnotherTypeOrWhenFull) {
  ChunkedFile file;
  file.add_chunk(0, 0, 100, process_record(), alloc_at(10, 0, 0x1000, 1),
                 alloc_at(20, 0, 0x1100, 2), ThreadRecord{25, 100, "main"}, free_at(30, 0x1000));
  file.add_chunk(1, 0, 200, alloc_at(15, 0, 0x2000, 3), free_at(40, 0x2000));
  const std::vector<std::string> expected = {
      "record of type 1 at 0", "alloc 10 1 thread 100",   "alloc 15 3 thread 200",
      "alloc 20 2 thread 100", "record of type 14 at 25", "free 30 4096",
      "free 40 8192"};
  for (const auto& [out, shapes_expected] :
       std::vector<std::pair<std::size_t, std::vector<std::string>>>{
           {64, {"0+", "3+", "2"}},
           {2, {"0+", "2", "1+", "2"}},
           {1, {"0+", "1", "1", "1", "0+", "1", "1"}}}) {
    TraceReader reader(file.bytes(), header_of(file.bytes()));
    std::vector<std::string> shapes;
    EXPECT_EQ(read_in_batches(reader, out, &shapes), expected) << out;
    EXPECT_EQ(shapes, shapes_expected) << out;
    std::array<const MemoryEvent*, 4> events;
    const TraceReader::Batch after = reader.next_batch(events);  // and stays at the end
    EXPECT_EQ(after.events, 0u);
    EXPECT_EQ(after.other, nullptr);
  }
  // No room for an event: an error, not a batch that would read as the end.
  TraceReader reader(file.bytes(), header_of(file.bytes()));
  EXPECT_THROW(reader.next_batch({}), std::invalid_argument);
}

// Three writers of many records each (their lanes are decoded ahead many times over, within
// batches too), with ties, frees and records of other types among them: the batches, of any
// size, give what next_record() gives, in its order.
TEST(TraceReader, BatchesGiveTheRecordsOfNextRecordInItsOrder) {
  ChunkedFile file(1 << 12);
  uint64_t seed = 99;
  for (uint32_t w = 0; w < 3; ++w) {
    uint64_t t = 0;
    for (uint32_t chunk = 0; chunk < 6; ++chunk) {
      std::vector<Record> records;
      for (int i = 0; i < 60; ++i) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        t += (seed >> 60) % 3;  // ties within and across writers
        const uint64_t address = 0x100000ull * (w + 1) + 0x100ull * (chunk * 60 + i);
        records.push_back(alloc_at(t, 0, address, w * 10000 + chunk * 60 + i));
        if ((seed >> 40) % 2 == 0) records.push_back(free_at(t, address));
        if (i % 25 == 7) records.push_back(ThreadRecord{t, w, "w"});
      }
      file.add_chunk_of(w, chunk, 100 + w, records);
    }
  }
  TraceReader one_at_a_time(file.bytes(), header_of(file.bytes()));
  const std::vector<std::string> expected = read_one_at_a_time(one_at_a_time);
  ASSERT_GT(expected.size(), 3u * 6 * 60);
  for (std::size_t out : {std::size_t{1}, std::size_t{7}, std::size_t{64}, std::size_t{500}}) {
    TraceReader reader(file.bytes(), header_of(file.bytes()));
    EXPECT_EQ(read_in_batches(reader, out), expected) << out;
    EXPECT_TRUE(reader.problems().empty());
  }
}

// Times from 2^62 - 2 ns on (146 years into a process: only a damaged record has one) count as
// equal: they come out by writer, after every earlier time, and none is lost.
TEST(TraceReader, TimesFrom2To62CountAsEqual) {
  ChunkedFile file;
  const uint64_t far = (uint64_t{1} << 62) - 2;
  file.add_chunk(0, 0, 100, alloc_at(far + 5, 0, 0x1000, 1));
  file.add_chunk(1, 0, 200, alloc_at(7, 0, 0x2000, 2), alloc_at(far + 1, 0, 0x2100, 3));
  TraceReader reader(file.bytes(), header_of(file.bytes()));
  std::vector<uint64_t> sizes;
  for (const Record& r : read_all(reader)) sizes.push_back(std::get<AllocRecord>(r).size);
  EXPECT_EQ(sizes, (std::vector<uint64_t>{2, 1, 3}));
}

// With a file mapping's PageAccess, the up-front check reads copies, and the chunks are given
// back once read (in batches of adjacent chunks): a reader that keeps few pages resident,
// whatever the size of the trace. A copy that fails falls back to the mapping. Before format 4.1
// the check copies whole chunks (it counts their records); from 4.1 their headers only.
TEST(TraceReader, ChecksCopiesAndReleasesEachChunkOnceRead) {
  for (const uint16_t minor : {uint16_t{0}, uint16_t{1}}) {
    ChunkedFile file(4096, 4, minor);
    const uint64_t a = file.add_chunk(0, 0, 100, process_record(), alloc_at(10, 0, 0xa000, 64));
    const uint64_t b = file.add_chunk(1, 0, 200, alloc_at(20, 0, 0xb000, 8));
    const uint64_t c = file.add_chunk(0, 1, 100, alloc_at(40, 0, 0xc000, 1));
    const uint64_t chunk = header_of(file.bytes()).chunk_size;
    const uint64_t read = minor == 0 ? chunk : kChunkHeaderSize;
    using Range = std::pair<uint64_t, uint64_t>;
    for (const bool copies_work : {true, false}) {
      std::vector<Range> copied;
      std::vector<Range> released;
      PageAccess pages;
      pages.copy = [&](uint64_t offset, uint8_t* out, std::size_t n) {
        copied.emplace_back(offset, n);
        if (copies_work) std::copy_n(file.bytes().begin() + offset, n, out);
        return copies_work;
      };
      pages.release = [&](uint64_t offset, uint64_t length) {
        released.emplace_back(offset, length);
      };
      TraceReader reader(file.bytes(), header_of(file.bytes()), pages);
      EXPECT_EQ(copied, (std::vector<Range>{{a, read}, {b, read}, {c, read}})) << minor;
      EXPECT_EQ(reader.expected_records(), 4u);
      EXPECT_TRUE(released.empty());
      ASSERT_EQ(read_all(reader).size(), 4u);
      // Released in batches, as runs of adjacent chunks: here all three at the end, as one run.
      EXPECT_EQ(released, (std::vector<Range>{{a, 3 * chunk}}));
      EXPECT_EQ(b, a + chunk);
      EXPECT_EQ(c, b + chunk);
      EXPECT_TRUE(reader.problems().empty());
    }
  }
}

// From format 4.1 the number of records comes from the chunks' headers. A header that says 7
// where there are 2 shows where the figure came from; the records read are still the real ones.
TEST(TraceReader, ExpectedRecordsComeFromTheChunkHeadersFromFormat41) {
  ChunkedFile file;
  ASSERT_EQ(header_of(file.bytes()).minor, kVersionMinor);  // 4.1 or later: chunks count
  const uint64_t a = file.add_chunk(0, 0, 100, process_record(), alloc_at(10, 0, 0xa000, 64));
  file.add_chunk(1, 0, 200, alloc_at(20, 0, 0xb000, 8));
  file.set_counted(a, counted_word(file.published_length(a), 7));
  TraceReader reader(file.bytes(), header_of(file.bytes()));
  EXPECT_EQ(reader.expected_records(), 8u);
  EXPECT_EQ(read_all(reader).size(), 3u);
  EXPECT_TRUE(reader.problems().empty());
}

// A count is for the bytes its length names. A chunk its writer never left (its thread still
// running at exit, or its process killed) has a zero count word; one written to after its count
// (exit-time frees) a count for fewer bytes than are published. Such a chunk is read and counted
// up front, as before 4.1. So are the chunks of a 4.0 file, whatever their reserved word holds,
// and those of a minor newer than this build's, whose counts may include record types it does
// not know.
TEST(TraceReader, ACountIsUsedOnlyForTheBytesItNamesAndTheVersionsThatHaveIt) {
  enum class Word { kMatching, kZero, kShort };
  struct Case {
    uint16_t minor;
    Word word;  // chunk a's count word
  };
  for (const Case& c : {Case{1, Word::kZero}, Case{1, Word::kShort}, Case{0, Word::kMatching},
                        Case{kVersionMinor + 1, Word::kMatching}}) {
    ChunkedFile file(4096, 4, c.minor);
    const uint64_t a = file.add_chunk(0, 0, 100, process_record(), alloc_at(10, 0, 0xa000, 64));
    const uint64_t b = file.add_chunk(1, 0, 200, alloc_at(20, 0, 0xb000, 8));
    const uint32_t length = file.published_length(a);
    file.set_counted(a, c.word == Word::kZero    ? 0
                        : c.word == Word::kShort ? counted_word(length - 1, 3)
                                                 : counted_word(length, 3));
    file.set_counted(b, counted_word(file.published_length(b), 5));
    std::vector<std::pair<uint64_t, std::size_t>> copied;
    PageAccess pages;
    pages.copy = [&](uint64_t offset, uint8_t* out, std::size_t n) {
      copied.emplace_back(offset, n);
      std::copy_n(file.bytes().begin() + offset, n, out);
      return true;
    };
    TraceReader reader(file.bytes(), header_of(file.bytes()), pages);
    if (c.minor == 1) {
      // Chunk a counted by reading it (2 records), chunk b by its header (5, however many).
      EXPECT_EQ(reader.expected_records(), 7u);
      EXPECT_EQ(copied, (std::vector<std::pair<uint64_t, std::size_t>>{
                            {a, kChunkHeaderSize}, {a, 4096}, {b, kChunkHeaderSize}}));
    } else {
      EXPECT_EQ(reader.expected_records(), 3u) << c.minor;
      EXPECT_EQ(copied, (std::vector<std::pair<uint64_t, std::size_t>>{{a, 4096}, {b, 4096}}))
          << c.minor;
    }
    EXPECT_EQ(read_all(reader).size(), 3u);
    EXPECT_TRUE(reader.problems().empty());
  }
}

// A long trace is given back as it is read, 256 chunks at a time, not all at the end.
TEST(TraceReader, ReleasesLongTracesAsItGoes) {
  ChunkedFile file;
  uint64_t first = 0;
  for (uint32_t i = 0; i < 300; ++i) {
    const uint64_t at = i == 0
                            ? file.add_chunk(0, 0, 100, process_record(), alloc_at(1, 0, 0x1000, 8))
                            : file.add_chunk(0, i, 100, alloc_at(1 + i, 0, 0x1000 + i, 8));
    if (i == 0) first = at;
  }
  const uint64_t chunk = header_of(file.bytes()).chunk_size;
  std::vector<std::pair<uint64_t, uint64_t>> released;
  PageAccess pages;
  pages.release = [&](uint64_t offset, uint64_t length) { released.emplace_back(offset, length); };
  TraceReader reader(file.bytes(), header_of(file.bytes()), pages);
  uint64_t records = 0;
  while (reader.next_record() != nullptr) {
    ++records;
    if (records == 258) {  // the process record, then one allocation per chunk
      EXPECT_EQ(released, (std::vector<std::pair<uint64_t, uint64_t>>{{first, 256 * chunk}}));
    }
  }
  EXPECT_EQ(records, 301u);
  EXPECT_EQ(released, (std::vector<std::pair<uint64_t, uint64_t>>{
                          {first, 256 * chunk}, {first + 256 * chunk, 44 * chunk}}));
}

// Before format 4.1 the up-front pass finds the damage; from 4.1, the chunk's decoding.
TEST(TraceReader, AFlippedByteLosesOnlyItsChunkAndSaysWhere) {
  for (const uint16_t minor : {uint16_t{0}, uint16_t{1}}) {
    ChunkedFile file(4096, 4, minor);
    file.add_chunk(0, 0, 100, process_record(), alloc_at(10, 0, 0xa000, 64));
    const uint64_t damaged = file.add_chunk(1, 0, 200, alloc_at(20, 0, 0xb000, 8));
    file.bytes()[damaged + kChunkHeaderSize + 3] ^= 0x40;
    std::vector<std::pair<uint64_t, uint64_t>> released;
    PageAccess pages;
    pages.release = [&](uint64_t offset, uint64_t length) {
      released.emplace_back(offset, length);
    };
    TraceReader reader(file.bytes(), header_of(file.bytes()), pages);
    const std::vector<Record> records = read_all(reader);
    ASSERT_EQ(records.size(), 2u) << minor;
    EXPECT_EQ(std::get<AllocRecord>(records[1]).address, 0xa000u);
    ASSERT_EQ(reader.problems().size(), 1u) << minor;
    EXPECT_EQ(reader.problems()[0].kind, ReadProblem::Kind::kCorrupt);
    EXPECT_EQ(reader.problems()[0].offset, damaged);
    EXPECT_EQ(reader.problems()[0].reason,
              "checksum mismatch in a chunk of thread 200; its records are lost");
    // Given back with the chunk read before it, when found as it was to be decoded.
    const uint64_t first = damaged - 4096;
    EXPECT_EQ(released,
              (std::vector<std::pair<uint64_t, uint64_t>>{{first, minor == 0 ? 4096u : 2 * 4096u}}))
        << minor;
  }
}

// Problems come in the order of their offsets, whichever pass found them: here a checksum
// found wrong as its chunk is decoded, before a bad magic that the up-front pass found.
TEST(TraceReader, ProblemsAreInFileOrder) {
  ChunkedFile file;
  file.add_chunk(0, 0, 100, process_record(), alloc_at(10, 0, 0xa000, 64));
  const uint64_t flipped = file.add_chunk(1, 0, 200, alloc_at(20, 0, 0xb000, 8));
  const uint64_t bad_magic = file.add_chunk(2, 0, 300, alloc_at(30, 0, 0xc000, 8));
  file.bytes()[flipped + kChunkHeaderSize + 3] ^= 0x40;
  file.bytes()[bad_magic] = 'X';
  TraceReader reader(file.bytes(), header_of(file.bytes()));
  EXPECT_EQ(read_all(reader).size(), 2u);
  ASSERT_EQ(reader.problems().size(), 2u);
  EXPECT_EQ(reader.problems()[0].offset, flipped);
  EXPECT_EQ(reader.problems()[1].offset, bad_magic);
}

// Format 3 files (zlib's CRC-32 per chunk) are still read; the checksum goes by the header's
// version, so the same chunks under the other version's header are all found damaged.
TEST(TraceReader, ReadsFormatThreeByItsOwnChecksum) {
  for (const uint16_t major : {uint16_t{3}, kVersionMajor}) {
    ChunkedFile file(4096, major);
    file.add_chunk(0, 0, 100, process_record(), alloc_at(10, 0, 0xa000, 64));
    file.add_chunk(1, 0, 200, alloc_at(20, 0, 0xb000, 8));
    TraceReader reader(file.bytes(), header_of(file.bytes()));
    EXPECT_EQ(read_all(reader).size(), 3u) << major;
    EXPECT_TRUE(reader.problems().empty()) << major;

    FileHeader other = header_of(file.bytes());
    other.major = major == 3 ? kVersionMajor : 3;
    TraceReader mismatched(file.bytes(), other);
    EXPECT_EQ(read_all(mismatched).size(), 0u) << major;
    ASSERT_EQ(mismatched.problems().size(), 2u) << major;
    EXPECT_EQ(mismatched.problems()[1].reason,
              "checksum mismatch in a chunk of thread 200; its records are lost");
  }
}

TEST(TraceReader, ACutFileKeepsEveryCompleteChunk) {
  ChunkedFile file;
  file.add_chunk(0, 0, 100, process_record(), alloc_at(10, 0, 0xa000, 64));
  const uint64_t last = file.add_chunk(1, 0, 200, alloc_at(20, 0, 0xb000, 8));
  file.bytes().resize(last + kChunkHeaderSize + 2);  // inside the last chunk's payload
  TraceReader reader(file.bytes(), header_of(file.bytes()));
  EXPECT_EQ(read_all(reader).size(), 2u);
  ASSERT_EQ(reader.problems().size(), 1u);
  EXPECT_EQ(reader.problems()[0].kind, ReadProblem::Kind::kTruncated);
  EXPECT_EQ(reader.problems()[0].offset, last);
}

// Format 4.9: the header says where the chunks end, so a file that lost whole chunks at its end
// is truncated at the first one missing, with their number; before 4.9 (a zero word) it reads
// as whole, as it always did.
TEST(TraceReader, WholeChunksMissingAtTheEndAreTruncationFromFormat49) {
  for (const uint16_t minor : {uint16_t{8}, kVersionMinor}) {
    ChunkedFile file(4096, kVersionMajor, minor);
    file.add_chunk(0, 0, 100, process_record(), alloc_at(10, 0, 0xa000, 64));
    const uint64_t second = file.add_chunk(1, 0, 200, alloc_at(20, 0, 0xb000, 8));
    file.add_chunk(1, 1, 200, alloc_at(30, 0, 0xc000, 8));
    file.add_chunk(2, 0, 300, alloc_at(40, 0, 0xd000, 8));
    const uint64_t end = file.bytes().size();
    if (minor >= 9) std::memcpy(file.bytes().data() + kChunksEndOffset, &end, sizeof end);
    EXPECT_EQ(header_of(file.bytes()).chunks_end, minor >= 9 ? end : 0) << minor;
    {
      TraceReader whole(file.bytes(), header_of(file.bytes()));
      EXPECT_EQ(read_all(whole).size(), 5u);
      EXPECT_TRUE(whole.problems().empty()) << minor;
    }
    std::vector<uint8_t> cut(file.bytes().begin(), file.bytes().begin() + second);
    TraceReader reader(cut, header_of(cut));
    EXPECT_EQ(read_all(reader).size(), 2u) << minor;
    if (minor < 9) {
      EXPECT_TRUE(reader.problems().empty());
      continue;
    }
    ASSERT_EQ(reader.problems().size(), 1u);
    EXPECT_EQ(reader.problems()[0].kind, ReadProblem::Kind::kTruncated);
    EXPECT_EQ(reader.problems()[0].offset, second);
    EXPECT_EQ(reader.problems()[0].reason,
              "the file ends at byte 8192 but its chunks run to byte 20480: 3 whole chunks are "
              "missing, their records lost");
    // Cut inside a chunk: that chunk is named, and the whole ones after it.
    cut.assign(file.bytes().begin(), file.bytes().begin() + second + kChunkHeaderSize + 1);
    TraceReader inside(cut, header_of(cut));
    EXPECT_EQ(read_all(inside).size(), 2u);
    ASSERT_EQ(inside.problems().size(), 2u);
    EXPECT_EQ(inside.problems()[0].offset, second);
    EXPECT_EQ(inside.problems()[1].offset, second + 4096);
    EXPECT_EQ(inside.problems()[1].reason,
              "the file ends at byte 8225 but its chunks run to byte 20480: 2 whole chunks are "
              "missing, their records lost");
  }
}

TEST(TraceReader, UnusedChunksAndUnpublishedBytesAreNotRecords) {
  ChunkedFile file;
  const uint64_t first = file.add_chunk(0, 0, 100, process_record(), alloc_at(10, 0, 0xa000, 64));
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
  file.add_chunk(0, 0, 100, process_record());
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
