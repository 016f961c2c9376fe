// SPDX-License-Identifier: Apache-2.0
// A bounded trace read while it is written (`gpumemtrace top`): chunks reused between two reads
// are followed when every record of theirs was read, and when some were written over first, the
// watch says it fell behind and rebuilds its figures from the file, as `report` reads it.
#include "analyzer/model/live/live_trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "analyzer/model/summarize_trace.h"
#include "format/file_header.h"
#include "tests/unit/chunked_file.h"
#include "tests/unit/trace_bytes.h"

namespace gmt::analyzer {
namespace {

using format::CheckpointAction;
using format::Record;
using test::alloc_at;
using test::ChunkedFile;
using test::free_at;

format::CheckpointRecord checkpoint(uint64_t t, uint32_t id, CheckpointAction action,
                                    uint64_t items = 0) {
  format::CheckpointRecord r;
  r.time_ns = t;
  r.id = id;
  r.action = static_cast<uint32_t>(action);
  r.items = items;
  return r;
}

format::CarriedRecord carried(uint64_t t, uint32_t id, uint64_t address, uint64_t size,
                              uint64_t alloc_time) {
  format::CarriedRecord r;
  r.time_ns = t;
  r.checkpoint = id;
  r.alloc_time_ns = alloc_time;
  r.device = 0;
  r.api = format::Api::kCuMemAlloc;
  r.address = address;
  r.size = size;
  return r;
}

void set_word(ChunkedFile& file, std::size_t offset, uint64_t value) {
  std::memcpy(file.bytes().data() + offset, &value, sizeof value);
}

constexpr uint64_t kChunk = 4096;
constexpr uint64_t kCheckpoints = format::kFirstChunkOffset + kChunk;  // chunk 1
constexpr uint64_t kThread = format::kFirstChunkOffset + 2 * kChunk;   // chunk 2

class LiveTraceReuse : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/gmt-live-trace-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    path_ = dir_ + "/bounded.gmt";
    // A bounded trace: its definitions (chunk 0), checkpoint 1 (chunk 1), and one thread's
    // first chunk (chunk 2): a and b allocated, a freed.
    set_word(file_, format::BoundedHeaderLayout::kMaxSize, 1 << 20);
    file_.add_chunk(0, 0, 0, test::process_record());
    file_.add_chunk_of(1, 0, 0,
                       {checkpoint(100, 1, CheckpointAction::kBegin),
                        checkpoint(100, 1, CheckpointAction::kEnd, 0)});
    file_.add_chunk_of(
        2, 0, 100,
        {alloc_at(200, 0, 0xa000, 64), alloc_at(210, 0, 0xb000, 32), free_at(220, 0xa000)});
    write();
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  // The file as it is now, written over the one the watch has open (the same inode).
  void write() {
    std::fstream out(path_, std::ios::in | std::ios::out | std::ios::binary);
    if (!out.is_open()) out.open(path_, std::ios::out | std::ios::binary);
    out.write(reinterpret_cast<const char*>(file_.bytes().data()),
              static_cast<std::streamsize>(file_.bytes().size()));
  }

  // What the writer does next: thread 2 goes on to chunk 3 with c, checkpoint 2 carries what
  // lives at 400 (`carried_before`, then c), and chunk 2 is reused as the thread's third chunk
  // (b freed, d allocated). The header counts `dropped` records in the chunks reused.
  void reuse_chunk_two(const std::vector<Record>& carried_before, uint64_t dropped) {
    file_.add_chunk_of(2, 1, 100, {alloc_at(300, 0, 0xc000, 128)});
    std::vector<Record> checkpoints = {checkpoint(100, 1, CheckpointAction::kBegin),
                                       checkpoint(100, 1, CheckpointAction::kEnd, 0),
                                       checkpoint(400, 2, CheckpointAction::kBegin)};
    checkpoints.insert(checkpoints.end(), carried_before.begin(), carried_before.end());
    checkpoints.push_back(carried(400, 2, 0xc000, 128, 300));
    checkpoints.push_back(checkpoint(400, 2, CheckpointAction::kEnd, carried_before.size() + 1));
    file_.replace_chunk_of(kCheckpoints, 1, 0, 0, checkpoints);
    set_word(file_, format::BoundedHeaderLayout::kValidFrom, 2);
    set_word(file_, format::BoundedHeaderLayout::kDroppedRecords, dropped);
    file_.replace_chunk_of(kThread, 2, 2, 100,
                           {free_at(500, 0xb000), alloc_at(510, 0, 0xd000, 16)});
    write();
  }

  // The watch's device 0 is what `report` makes of the file now.
  void expect_as_report(const LiveTrace& live) {
    const TraceSummary whole = summarize_trace(path_);
    ASSERT_EQ(whole.devices.count(0), 1u);
    ASSERT_EQ(live.summary().devices.count(0), 1u);
    const DeviceSummary& want = whole.devices.at(0);
    const DeviceSummary& got = live.summary().devices.at(0);
    EXPECT_EQ(got.live_bytes, want.live_bytes);
    EXPECT_EQ(got.live_count, want.live_count);
    EXPECT_EQ(got.peak_bytes, want.peak_bytes);
    EXPECT_EQ(got.peak_time_ns, want.peak_time_ns);
  }

  std::string dir_;
  std::string path_;
  ChunkedFile file_;
};

TEST_F(LiveTraceReuse, AChunkReusedAfterAllItsRecordsWereReadIsFollowed) {
  LiveTrace live(path_);
  ASSERT_TRUE(live.refresh()) << live.error();
  EXPECT_EQ(live.summary().devices.at(0).live_bytes, 32u);
  EXPECT_EQ(live.summary().devices.at(0).peak_bytes, 96u);

  // Chunk 2's three records were all read before it was reused: nothing is missing.
  reuse_chunk_two({carried(400, 2, 0xb000, 32, 210)}, 3);
  ASSERT_TRUE(live.refresh()) << live.error();
  EXPECT_EQ(live.behind().times, 0u);
  const DeviceSummary& d = live.summary().devices.at(0);
  EXPECT_EQ(d.live_bytes, 144u);  // c and d
  EXPECT_EQ(d.live_count, 2u);
  EXPECT_EQ(d.peak_bytes, 160u);  // b and c, from 300
  // The whole history is the watch's: a minute before is known.
  EXPECT_EQ(live.live_bytes_at(0, 0), std::optional<uint64_t>(0));
}

TEST_F(LiveTraceReuse, RecordsWrittenOverBeforeTheyWereReadAreSaidAndTheFiguresRebuilt) {
  LiveTrace live(path_);
  ASSERT_TRUE(live.refresh()) << live.error();
  EXPECT_EQ(live.summary().devices.at(0).live_bytes, 32u);

  // Chunk 2 got a fourth record (e, 1 KiB, never freed) after the watch read it, then was
  // reused: the header counts four records dropped, the watch read three.
  file_.replace_chunk_of(kThread, 2, 0, 100,
                         {alloc_at(200, 0, 0xa000, 64), alloc_at(210, 0, 0xb000, 32),
                          free_at(220, 0xa000), alloc_at(230, 0, 0xe000, 1024)});
  reuse_chunk_two({carried(400, 2, 0xb000, 32, 210), carried(400, 2, 0xe000, 1024, 230)}, 4);
  ASSERT_TRUE(live.refresh()) << live.error();
  EXPECT_EQ(live.behind().times, 1u);
  EXPECT_EQ(live.behind().records_missed, 1u);
  EXPECT_EQ(live.behind().history_from_ns, 400u);
  // Without the rebuild it would say 144 bytes in 2 (e never seen); from checkpoint 2 on:
  const DeviceSummary& d = live.summary().devices.at(0);
  EXPECT_EQ(d.live_bytes, 1168u);  // c, d and e
  EXPECT_EQ(d.live_count, 3u);
  EXPECT_EQ(d.peak_bytes, 1184u);  // b, c and e at the checkpoint
  EXPECT_EQ(d.peak_time_ns, 400u);
  expect_as_report(live);
  // Before the history it holds, the watch does not know what lived.
  EXPECT_EQ(live.live_bytes_at(0, 399), std::nullopt);

  // It goes on from the rebuilt state as records come, without falling behind again.
  file_.replace_chunk_of(
      kThread, 2, 2, 100,
      {free_at(500, 0xb000), alloc_at(510, 0, 0xd000, 16), free_at(600, 0xe000)});
  write();
  ASSERT_TRUE(live.refresh()) << live.error();
  EXPECT_EQ(live.behind().times, 1u);
  EXPECT_EQ(live.summary().devices.at(0).live_bytes, 144u);
  EXPECT_EQ(live.summary().devices.at(0).live_count, 2u);
  expect_as_report(live);
}

// A chunk reused twice between two reads: its middle life was never read at all.
TEST_F(LiveTraceReuse, AChunkReusedTwiceBetweenTwoReadsIsSeen) {
  LiveTrace live(path_);
  ASSERT_TRUE(live.refresh()) << live.error();
  // Its second life (sequence 1: c allocated, b freed) was dropped unread: 3 + 2 records.
  file_.add_chunk_of(3, 0, 101, {});  // another thread's chunk, still empty
  std::vector<Record> checkpoints = {
      checkpoint(100, 1, CheckpointAction::kBegin), checkpoint(100, 1, CheckpointAction::kEnd, 0),
      checkpoint(400, 2, CheckpointAction::kBegin), carried(400, 2, 0xc000, 128, 300),
      checkpoint(400, 2, CheckpointAction::kEnd, 1)};
  file_.replace_chunk_of(kCheckpoints, 1, 0, 0, checkpoints);
  set_word(file_, format::BoundedHeaderLayout::kValidFrom, 2);
  set_word(file_, format::BoundedHeaderLayout::kDroppedRecords, 5);
  file_.replace_chunk_of(kThread, 2, 2, 100, {alloc_at(510, 0, 0xd000, 16)});
  write();
  ASSERT_TRUE(live.refresh()) << live.error();
  EXPECT_EQ(live.behind().times, 1u);
  EXPECT_EQ(live.behind().records_missed, 2u);
  EXPECT_EQ(live.summary().devices.at(0).live_bytes, 144u);  // c and d
  expect_as_report(live);
}

}  // namespace
}  // namespace gmt::analyzer
