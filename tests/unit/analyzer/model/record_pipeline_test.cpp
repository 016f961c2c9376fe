// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/input/record_pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/file_header.h"
#include "tests/unit/chunked_file.h"
#include "tests/unit/trace_bytes.h"

namespace gmt::analyzer {
namespace {

using format::Record;
using format::TraceReader;

// Three writers, several chunks each, interleaved times: per chunk, 25 allocations, each but
// the first few freed again, and a thread's name among them: 3 x 4 x (25 + 22 + 1) records.
test::ChunkedFile three_writers() {
  test::ChunkedFile file(1 << 12);
  for (uint32_t w = 0; w < 3; ++w) {
    for (uint32_t chunk = 0; chunk < 4; ++chunk) {
      std::vector<format::Record> records;
      for (uint64_t i = 0; i < 25; ++i) {
        const uint64_t n = chunk * 25 + i;
        const uint64_t address = 0x100000 * (w + 1) + n * 0x100;
        records.push_back(test::alloc_at(n * 6 + w, 0, address, w * 1000 + n));
        if (i >= 3) records.push_back(test::free_at(n * 6 + 3 + w, address - 3 * 0x100));
        if (i == 12) records.push_back(format::ThreadRecord{n * 6 + w, 100 + w, "t"});
      }
      file.add_chunk_of(w, chunk, 100 + w, records);
    }
  }
  return file;
}

// What tells two records apart here: their type, and their size, address or name.
std::string signature(const Record& r) {
  if (const auto* a = std::get_if<format::AllocRecord>(&r)) {
    return "alloc " + std::to_string(a->size) + " thread " + std::to_string(a->thread);
  }
  if (const auto* f = std::get_if<format::FreeRecord>(&r)) {
    return "free " + std::to_string(f->address) + " thread " + std::to_string(f->thread);
  }
  if (const auto* t = std::get_if<format::ThreadRecord>(&r)) {
    return "thread " + std::to_string(t->tid) + " " + t->name;
  }
  return "record of type " + std::to_string(r.index() + 1);
}

std::vector<std::string> read_directly(test::ChunkedFile& file) {
  TraceReader reader(file.bytes(), format::check_header(file.bytes()).header);
  std::vector<std::string> records;
  while (const Record* r = reader.next_record()) records.push_back(signature(*r));
  return records;
}

// Every record the pipeline gives, `out` events at most at a time. The events of a batch are
// looked at only once the whole batch is in: they stay valid until the next call.
std::vector<std::string> read_through(RecordPipeline& records, std::size_t out) {
  std::vector<const format::MemoryEvent*> events(out);
  std::vector<std::string> given;
  while (true) {
    const TraceReader::Batch batch = records.next_batch(events);
    EXPECT_LE(batch.events, std::min(out, TraceReader::kBatchEvents));
    if (batch.events == 0 && batch.other == nullptr) break;
    for (std::size_t i = 0; i < batch.events; ++i) {
      Record record;
      format::to_record(*events[i], record);
      given.push_back(signature(record));
    }
    if (batch.other != nullptr) given.push_back(signature(*batch.other));
  }
  return given;
}

// Through a second thread or not, handed over in batches of any size (one record, a few, more
// than the trace) and taken a few or many at a time, the records come in the reader's own
// order, each exactly once, with their fields.
TEST(RecordPipeline, GivesTheReadersRecordsInItsOrderWhateverTheBatch) {
  test::ChunkedFile file = three_writers();
  const std::vector<std::string> expected = read_directly(file);
  ASSERT_EQ(expected.size(), 3u * 4 * (25 + 22 + 1));
  EXPECT_EQ(expected.front(), "alloc 0 thread 100");
  EXPECT_EQ(expected.back(), "free " + std::to_string(0x300000 + 96 * 0x100) + " thread 102");
  for (const auto mode : {RecordPipeline::Mode::kThread, RecordPipeline::Mode::kInline}) {
    for (const std::size_t batch :
         {std::size_t{1}, std::size_t{7}, std::size_t{300}, std::size_t{4096}}) {
      for (const std::size_t out : {std::size_t{1}, std::size_t{5}, std::size_t{200}}) {
        TraceReader reader(file.bytes(), format::check_header(file.bytes()).header);
        RecordPipeline records(reader, mode, batch);
        EXPECT_EQ(records.threaded(), mode == RecordPipeline::Mode::kThread);
        EXPECT_EQ(read_through(records, out), expected) << "batch " << batch << ", out " << out;
        std::array<const format::MemoryEvent*, 4> events;
        const TraceReader::Batch after = records.next_batch(events);  // and stays at the end
        EXPECT_EQ(after.events, 0u);
        EXPECT_EQ(after.other, nullptr);
      }
    }
  }
}

// A consumer that stops early (an exception in the replay, say) leaves without waiting for the
// whole trace, and the reader thread stops.
TEST(RecordPipeline, StopsWhenTheConsumerLeavesEarly) {
  test::ChunkedFile file = three_writers();
  for (int taken : {0, 1, 5, 150}) {
    TraceReader reader(file.bytes(), format::check_header(file.bytes()).header);
    RecordPipeline records(reader, RecordPipeline::Mode::kThread, 2);
    std::array<const format::MemoryEvent*, 1> events;
    for (int i = 0; i < taken; ++i) {
      const TraceReader::Batch batch = records.next_batch(events);
      ASSERT_TRUE(batch.events == 1 || batch.other != nullptr);
    }
  }
}

// No room for an event is an error in either mode, never a batch that reads as the end.
TEST(RecordPipeline, NoRoomForAnEventIsAnError) {
  test::ChunkedFile file = three_writers();
  for (const auto mode : {RecordPipeline::Mode::kThread, RecordPipeline::Mode::kInline}) {
    TraceReader reader(file.bytes(), format::check_header(file.bytes()).header);
    RecordPipeline records(reader, mode);
    EXPECT_THROW(records.next_batch({}), std::invalid_argument);
  }
}

TEST(RecordPipeline, AnEmptyTraceEndsAtOnce) {
  test::ChunkedFile file;
  TraceReader reader(file.bytes(), format::check_header(file.bytes()).header);
  RecordPipeline records(reader, RecordPipeline::Mode::kThread);
  std::array<const format::MemoryEvent*, 8> events;
  for (int i = 0; i < 2; ++i) {
    const TraceReader::Batch batch = records.next_batch(events);
    EXPECT_EQ(batch.events, 0u);
    EXPECT_EQ(batch.other, nullptr);
  }
}

TEST(RecordPipeline, UsableCpusIsAtLeastOne) {
  EXPECT_GE(usable_cpus(), 1u);
}

}  // namespace
}  // namespace gmt::analyzer
