#include "analyzer/record_pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "format/file_header.h"
#include "tests/unit/chunked_file.h"
#include "tests/unit/trace_bytes.h"

namespace gmt::analyzer {
namespace {

using format::Record;
using format::TraceReader;

// Three writers, several chunks each, interleaved times: 3 x 4 x 25 allocations.
test::ChunkedFile three_writers() {
  test::ChunkedFile file(1 << 12);
  for (uint32_t w = 0; w < 3; ++w) {
    for (uint32_t chunk = 0; chunk < 4; ++chunk) {
      std::vector<format::AllocRecord> allocs;
      for (uint64_t i = 0; i < 25; ++i) {
        const uint64_t n = chunk * 25 + i;
        allocs.push_back(
            test::alloc_at(n * 3 + w, 0, 0x100000 * (w + 1) + n * 0x100, w * 1000 + n));
      }
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        file.add_chunk(w, chunk, 100 + w, allocs[I]...);
      }
      (std::make_index_sequence<25>());
    }
  }
  return file;
}

std::vector<uint64_t> sizes_read_directly(test::ChunkedFile& file) {
  TraceReader reader(file.bytes(), format::check_header(file.bytes()).header);
  std::vector<uint64_t> sizes;
  while (const Record* r = reader.next_record())
    sizes.push_back(std::get<format::AllocRecord>(*r).size);
  return sizes;
}

// Through a second thread, in batches of any size (one record, a few, more than the trace), the
// records come in the reader's own order, each exactly once, with their fields.
TEST(RecordPipeline, GivesTheReadersRecordsInItsOrderWhateverTheBatch) {
  test::ChunkedFile file = three_writers();
  const std::vector<uint64_t> expected = sizes_read_directly(file);
  ASSERT_EQ(expected.size(), 300u);
  for (const auto mode : {RecordPipeline::Mode::kThread, RecordPipeline::Mode::kInline}) {
    for (const std::size_t batch :
         {std::size_t{1}, std::size_t{7}, std::size_t{300}, std::size_t{4096}}) {
      TraceReader reader(file.bytes(), format::check_header(file.bytes()).header);
      RecordPipeline records(reader, mode, batch);
      EXPECT_EQ(records.threaded(), mode == RecordPipeline::Mode::kThread);
      std::vector<uint64_t> sizes;
      while (const Record* r = records.next()) {
        const auto& a = std::get<format::AllocRecord>(*r);
        EXPECT_EQ(a.thread, 100 + a.size / 1000);
        sizes.push_back(a.size);
      }
      EXPECT_EQ(sizes, expected) << "batch " << batch;
      EXPECT_EQ(records.next(), nullptr);  // and stays at the end
    }
  }
}

// soon_address() names records still to come, already read: each of them is given by next()
// later. On a thread it looks a few records ahead within the batch; inline it is the address of
// the reader's newest.
TEST(RecordPipeline, SoonAddressIsThatOfARecordStillToCome) {
  test::ChunkedFile file = three_writers();
  const std::vector<uint64_t> expected = sizes_read_directly(file);
  for (const auto mode : {RecordPipeline::Mode::kThread, RecordPipeline::Mode::kInline}) {
    TraceReader reader(file.bytes(), format::check_header(file.bytes()).header);
    RecordPipeline records(reader, mode, 64);
    std::size_t given = 0;
    std::size_t named = 0;
    std::set<uint64_t> seen;  // sizes are unique: each record is named once at most
    while (records.next() != nullptr) {
      ++given;
      const uint64_t address = records.soon_address();
      if (address == 0) continue;
      ++named;
      // three_writers() gives size w * 1000 + n the address 0x100000 * (w + 1) + n * 0x100.
      const uint64_t size = (address / 0x100000 - 1) * 1000 + address % 0x100000 / 0x100;
      EXPECT_TRUE(seen.insert(size).second) << "record " << size << " named twice";
      const auto at =
          std::find(expected.begin() + static_cast<std::ptrdiff_t>(given), expected.end(), size);
      EXPECT_NE(at, expected.end()) << "record " << size << " was already given";
    }
    EXPECT_EQ(given, expected.size());
    // Most records are named ahead: all but the first few of each batch, or of each writer.
    EXPECT_GT(named, expected.size() / 2);
  }
}

// A consumer that stops early (an exception in the replay, say) leaves without waiting for the
// whole trace, and the reader thread stops.
TEST(RecordPipeline, StopsWhenTheConsumerLeavesEarly) {
  test::ChunkedFile file = three_writers();
  for (int taken : {0, 1, 5, 150}) {
    TraceReader reader(file.bytes(), format::check_header(file.bytes()).header);
    RecordPipeline records(reader, RecordPipeline::Mode::kThread, 2);
    for (int i = 0; i < taken; ++i) ASSERT_NE(records.next(), nullptr);
  }
}

TEST(RecordPipeline, AnEmptyTraceEndsAtOnce) {
  test::ChunkedFile file;
  TraceReader reader(file.bytes(), format::check_header(file.bytes()).header);
  RecordPipeline records(reader, RecordPipeline::Mode::kThread);
  EXPECT_EQ(records.next(), nullptr);
  EXPECT_EQ(records.next(), nullptr);
}

TEST(RecordPipeline, UsableCpusIsAtLeastOne) {
  EXPECT_GE(usable_cpus(), 1u);
}

}  // namespace
}  // namespace gmt::analyzer
