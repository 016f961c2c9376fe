// SPDX-License-Identifier: Apache-2.0
// How a reader rebuilds a bounded trace's history (formats 4.3 to 4.5): from the oldest whole
// checkpoint the header allows, with its Carried records as allocations at its time, definitions
// whatever their age, and nothing older.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "format/file_header.h"
#include "format/trace_reader.h"
#include "tests/unit/chunked_file.h"
#include "tests/unit/trace_bytes.h"

namespace gmt::format {
namespace {

using test::alloc_at;
using test::ChunkedFile;
using test::free_at;
using test::process_record;

CheckpointRecord checkpoint(uint64_t t, uint32_t id, CheckpointAction action, uint64_t items = 0) {
  CheckpointRecord r;
  r.time_ns = t;
  r.id = id;
  r.action = static_cast<uint32_t>(action);
  r.items = items;
  return r;
}

CarriedRecord carried(uint64_t t, uint32_t id, uint64_t address, uint64_t size) {
  CarriedRecord r;
  r.time_ns = t;
  r.checkpoint = id;
  r.alloc_time_ns = 1;
  r.device = 0;
  r.api = Api::kCuMemAlloc;
  r.address = address;
  r.size = size;
  r.stack = 3;
  return r;
}

void set_word(ChunkedFile& file, std::size_t offset, uint64_t value) {
  std::memcpy(file.bytes().data() + offset, &value, sizeof value);
}

// A bounded trace's header, valid from checkpoint `valid_from`, and its definitions (writer 0).
ChunkedFile bounded_header(uint64_t valid_from) {
  ChunkedFile file;
  set_word(file, BoundedHeaderLayout::kMaxSize, 1 << 20);
  set_word(file, BoundedHeaderLayout::kValidFrom, valid_from);
  file.add_chunk(0, 0, 0, process_record());
  return file;
}

// Definitions (writer 0), checkpoints 1 and 2 (writer 1; checkpoint 2 whole only when
// `second_whole`), and the one thread's chunk left after its first three were reused.
ChunkedFile bounded_file(uint64_t valid_from, bool second_whole) {
  ChunkedFile file = bounded_header(valid_from);
  set_word(file, BoundedHeaderLayout::kDroppedRecords, 50);
  std::vector<Record> checkpoints = {checkpoint(100, 1, CheckpointAction::kBegin),
                                     carried(100, 1, 0xa000, 64),
                                     checkpoint(100, 1, CheckpointAction::kEnd, 1),
                                     checkpoint(300, 2, CheckpointAction::kBegin),
                                     carried(300, 2, 0xa000, 64),
                                     carried(300, 2, 0xc000, 32)};
  if (second_whole) checkpoints.push_back(checkpoint(300, 2, CheckpointAction::kEnd, 2));
  file.add_chunk_of(1, 0, 0, checkpoints);
  file.add_chunk(2, 3, 100, alloc_at(250, 0, 0xc000, 32), free_at(320, 0xa000),
                 alloc_at(400, 0, 0xd000, 8));
  return file;
}

struct Seen {
  std::vector<std::pair<uint64_t, uint64_t>> allocs;  // (time, address)
  std::vector<uint64_t> frees;
  std::size_t records = 0;
};

Seen read_window(ChunkedFile& file, HistoryWindow& window, uint64_t& expected) {
  const HeaderCheck header = check_header(file.bytes());
  EXPECT_TRUE(header.ok) << header.error;
  TraceReader reader(file.bytes(), header.header);
  window = reader.window();
  expected = reader.expected_records();
  Seen seen;
  while (const Record* r = reader.next_record()) {
    ++seen.records;
    if (const auto* a = std::get_if<AllocRecord>(r))
      seen.allocs.emplace_back(a->time_ns, a->address);
    if (const auto* f = std::get_if<FreeRecord>(r)) seen.frees.push_back(f->address);
    // Given as they are when nothing is rebuilt from them.
    if (window.dropped) {
      EXPECT_FALSE(std::holds_alternative<CheckpointRecord>(*r));
      EXPECT_FALSE(std::holds_alternative<CarriedRecord>(*r));
    }
  }
  return seen;
}

TEST(HistoryWindow, StartsFromTheOldestWholeCheckpointTheHeaderAllows) {
  ChunkedFile file = bounded_file(2, true);
  HistoryWindow window;
  uint64_t expected = 0;
  const Seen seen = read_window(file, window, expected);
  EXPECT_TRUE(window.dropped);
  EXPECT_EQ(window.max_size, 1u << 20);
  EXPECT_EQ(window.checkpoint, 2u);
  EXPECT_EQ(window.kept_from_ns, 300u);
  EXPECT_EQ(window.dropped_records, 51u);  // 50 written over, the allocation at 250 before it
  EXPECT_EQ(window.carried_allocations, 2u);
  EXPECT_EQ(window.carried_bytes, 96u);
  const std::vector<std::pair<uint64_t, uint64_t>> allocs = {
      {300, 0xa000}, {300, 0xc000}, {400, 0xd000}};
  EXPECT_EQ(seen.allocs, allocs);
  EXPECT_EQ(seen.frees, std::vector<uint64_t>{0xa000});
  EXPECT_EQ(seen.records, 5u);  // and the process
  EXPECT_EQ(expected, 5u);
}

// Killed while checkpoint 2 was being written: checkpoint 1 is the one to start from, and the
// history from its time is all there.
TEST(HistoryWindow, ACheckpointWithoutItsEndIsNotUsed) {
  ChunkedFile file = bounded_file(1, false);
  HistoryWindow window;
  uint64_t expected = 0;
  const Seen seen = read_window(file, window, expected);
  EXPECT_EQ(window.checkpoint, 1u);
  EXPECT_EQ(window.kept_from_ns, 100u);
  EXPECT_EQ(window.dropped_records, 50u);
  const std::vector<std::pair<uint64_t, uint64_t>> allocs = {
      {100, 0xa000}, {250, 0xc000}, {400, 0xd000}};
  EXPECT_EQ(seen.allocs, allocs);
  EXPECT_EQ(seen.records, 5u);
  EXPECT_EQ(expected, 5u);
}

TEST(HistoryWindow, NoneLeftToStartFromIsAProblemAndTheRecordsComeAsTheyAre) {
  ChunkedFile file = bounded_file(2, false);
  HistoryWindow window;
  uint64_t expected = 0;
  const Seen seen = read_window(file, window, expected);
  EXPECT_FALSE(window.dropped);
  EXPECT_NE(window.problem.find("no whole checkpoint"), std::string::npos) << window.problem;
  EXPECT_EQ(seen.allocs.size(), 2u);  // 250 and 400; the checkpoints' records are left out
}

TEST(HistoryWindow, ANothingDroppedBoundedTraceIsReadWhole) {
  ChunkedFile file = bounded_file(0, true);
  HistoryWindow window;
  uint64_t expected = 0;
  const Seen seen = read_window(file, window, expected);
  EXPECT_FALSE(window.dropped);
  EXPECT_TRUE(window.problem.empty());
  EXPECT_EQ(window.max_size, 1u << 20);
  EXPECT_EQ(seen.allocs.size(), 2u);
}

CarriedBlockRecord carried_block(uint32_t id, BlockAction action, uint64_t address, uint64_t size,
                                 uint32_t stack) {
  CarriedBlockRecord r;
  r.time_ns = 300;
  r.checkpoint = id;
  r.block_time_ns = 7;
  r.allocator = 1;
  r.action = static_cast<uint32_t>(action);
  r.device = 0;
  r.address = address;
  r.size = size;
  r.stream = 5;
  r.stack = stack;
  return r;
}

BlockRecord block_at(uint64_t t, BlockAction action, uint64_t address, uint64_t size) {
  BlockRecord r;
  r.time_ns = t;
  r.allocator = 1;
  r.action = static_cast<uint32_t>(action);
  r.device = 0;
  r.address = address;
  r.size = size;
  return r;
}

// A caching allocator's blocks and segments carried by the checkpoint come as Block records at
// its time, in the order written, with their fields; its block events before that time do not.
TEST(HistoryWindow, CarriedBlocksAreGivenAsBlockRecordsAtTheCheckpointsTime) {
  ChunkedFile file = bounded_header(1);
  file.add_chunk_of(1, 0, 0,
                    {checkpoint(300, 1, CheckpointAction::kBegin), carried(300, 1, 0xa000, 1 << 20),
                     carried_block(1, BlockAction::kSegmentAlloc, 0xa000, 1 << 20, 4),
                     carried_block(1, BlockAction::kAlloc, 0xa000, 512, 6),
                     carried_block(1, BlockAction::kFreeRequested, 0xa000, 512, 0),
                     checkpoint(300, 1, CheckpointAction::kEnd, 4)});
  file.add_chunk_of(2, 3, 100,
                    {block_at(250, BlockAction::kAlloc, 0xa200, 256),
                     block_at(320, BlockAction::kFreeCompleted, 0xa000, 512)});
  const HeaderCheck header = check_header(file.bytes());
  ASSERT_TRUE(header.ok) << header.error;
  TraceReader reader(file.bytes(), header.header);
  EXPECT_TRUE(reader.window().dropped);
  EXPECT_EQ(reader.window().carried_allocations, 1u);
  EXPECT_EQ(reader.window().carried_blocks, 3u);
  EXPECT_EQ(reader.expected_records(), 6u);  // the process, an allocation, four block events
  std::vector<std::tuple<uint64_t, uint32_t, uint64_t, uint64_t, uint64_t, uint32_t>> blocks;
  std::size_t records = 0;
  while (const Record* r = reader.next_record()) {
    ++records;
    EXPECT_FALSE(std::holds_alternative<CarriedBlockRecord>(*r));
    if (const auto* b = std::get_if<BlockRecord>(r)) {
      EXPECT_EQ(b->allocator, 1u);
      EXPECT_EQ(b->device, 0);
      blocks.emplace_back(b->time_ns, b->action, b->address, b->size, b->stream, b->stack);
    }
  }
  EXPECT_EQ(records, 6u);
  const uint32_t seg = static_cast<uint32_t>(BlockAction::kSegmentAlloc);
  const uint32_t alloc = static_cast<uint32_t>(BlockAction::kAlloc);
  const uint32_t requested = static_cast<uint32_t>(BlockAction::kFreeRequested);
  const uint32_t completed = static_cast<uint32_t>(BlockAction::kFreeCompleted);
  EXPECT_EQ(blocks,
            (std::vector<std::tuple<uint64_t, uint32_t, uint64_t, uint64_t, uint64_t, uint32_t>>{
                {300, seg, 0xa000, 1 << 20, 5, 4},
                {300, alloc, 0xa000, 512, 5, 6},
                {300, requested, 0xa000, 512, 5, 0},
                {320, completed, 0xa000, 512, 0, 0}}));
}

CarriedVmmRecord carried_vmm(CarriedVmmAction action, uint64_t handle, uint64_t address = 0) {
  CarriedVmmRecord r;
  r.time_ns = 300;
  r.checkpoint = 1;
  r.action = static_cast<uint32_t>(action);
  r.handle = handle;
  if (action == CarriedVmmAction::kMap) {
    r.event_time_ns = 9;
    r.device = 0;
    r.address = address;
    r.size = 2 << 20;
    r.offset = 0;
  }
  return r;
}

// VMM state carried by the checkpoint (4.4) comes as a Map, a RetainHandle and a cuMemRelease
// Free at its time, in the order written, after the handle's allocation.
TEST(HistoryWindow, CarriedVmmRecordsAreGivenAsMapsRetainsAndReleases) {
  ChunkedFile file = bounded_header(1);
  CarriedRecord handle = carried(300, 1, 0x77, 2 << 20);
  handle.kind = MemoryKind::kVmmPhysical;
  handle.api = Api::kCuMemCreate;
  file.add_chunk_of(
      1, 0, 0,
      {checkpoint(300, 1, CheckpointAction::kBegin), handle,
       carried_vmm(CarriedVmmAction::kMap, 0x77, 0x40000000),
       carried_vmm(CarriedVmmAction::kRetain, 0x77), carried_vmm(CarriedVmmAction::kRelease, 0x77),
       checkpoint(300, 1, CheckpointAction::kEnd, 4)});
  file.add_chunk_of(2, 3, 100, {block_at(320, BlockAction::kAlloc, 0xa200, 256)});
  const HeaderCheck header = check_header(file.bytes());
  ASSERT_TRUE(header.ok) << header.error;
  TraceReader reader(file.bytes(), header.header);
  ASSERT_TRUE(reader.window().dropped) << reader.window().problem;
  EXPECT_EQ(reader.window().checkpoint, 1u);
  std::vector<std::string> seen;
  while (const Record* r = reader.next_record()) {
    EXPECT_FALSE(std::holds_alternative<CarriedVmmRecord>(*r));
    if (const auto* a = std::get_if<AllocRecord>(r)) {
      seen.push_back("alloc " + std::to_string(a->address) + " at " + std::to_string(a->time_ns));
    } else if (const auto* m = std::get_if<MapRecord>(r)) {
      seen.push_back("map " + std::to_string(m->address) + " of " + std::to_string(m->handle) +
                     " size " + std::to_string(m->size) + " at " + std::to_string(m->time_ns));
    } else if (const auto* h = std::get_if<RetainHandleRecord>(r)) {
      seen.push_back("retain " + std::to_string(h->handle) + " at " + std::to_string(h->time_ns));
    } else if (const auto* f = std::get_if<FreeRecord>(r)) {
      EXPECT_EQ(f->api, Api::kCuMemRelease);
      seen.push_back("release " + std::to_string(f->address) + " at " + std::to_string(f->time_ns));
    }
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"alloc 119 at 300",
                                            "map 1073741824 of 119 size 2097152 at 300",
                                            "retain 119 at 300", "release 119 at 300"}));
}

CarriedPhaseRecord carried_phase(uint32_t checkpoint, PhaseAction action, uint64_t tid,
                                 uint32_t name, uint64_t range = 0) {
  CarriedPhaseRecord r;
  r.time_ns = checkpoint == 1 ? 300 : 200;
  r.checkpoint = checkpoint;
  r.phase_time_ns = 7;
  r.tid = tid;
  r.action = static_cast<uint32_t>(action);
  r.domain = 2;
  r.name = name;
  r.range = range;
  return r;
}

// Phases open at the checkpoint (4.5) come as the Phase records that opened them, at its time,
// in the order written; an older checkpoint's are left out.
TEST(HistoryWindow, CarriedPhasesAreGivenAsThePhasesTheyOpened) {
  ChunkedFile file = bounded_header(1);
  file.add_chunk_of(
      1, 0, 0,
      {checkpoint(300, 1, CheckpointAction::kBegin), carried_phase(1, PhaseAction::kPush, 41, 5),
       carried_phase(1, PhaseAction::kPush, 41, 6),
       carried_phase(1, PhaseAction::kStart, 42, 8, 99),
       checkpoint(300, 1, CheckpointAction::kEnd, 3)});
  file.add_chunk_of(2, 3, 100, {block_at(320, BlockAction::kAlloc, 0xa200, 256)});
  const HeaderCheck header = check_header(file.bytes());
  ASSERT_TRUE(header.ok) << header.error;
  TraceReader reader(file.bytes(), header.header);
  ASSERT_TRUE(reader.window().dropped) << reader.window().problem;
  std::vector<std::string> seen;
  while (const Record* r = reader.next_record()) {
    EXPECT_FALSE(std::holds_alternative<CarriedPhaseRecord>(*r));
    if (const auto* p = std::get_if<PhaseRecord>(r)) {
      seen.push_back(std::to_string(p->action) + " tid " + std::to_string(p->tid) + " domain " +
                     std::to_string(p->domain) + " name " + std::to_string(p->name) + " range " +
                     std::to_string(p->range) + " at " + std::to_string(p->time_ns));
    }
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"0 tid 41 domain 2 name 5 range 0 at 300",
                                            "0 tid 41 domain 2 name 6 range 0 at 300",
                                            "2 tid 42 domain 2 name 8 range 99 at 300"}));
}

}  // namespace
}  // namespace gmt::format
