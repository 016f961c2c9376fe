// SPDX-License-Identifier: Apache-2.0
// A caching allocator's free completed at once (format 4.7): the writer writes it as the two
// bytes of a BlockFreedAtOnce record only right after its own request of the same block, and the
// reader gives it back as that block's completion, at the request's time.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "analyzer/model/input/mapped_file.h"
#include "format/chunk.h"
#include "format/file_header.h"
#include "format/trace_reader.h"
#include "format/varint.h"
#include "interpose/config.h"
#include "interpose/record/trace_writer.h"

namespace gmt::interpose {
namespace {

namespace fs = std::filesystem;
using format::BlockAction;
using format::BlockRecord;

BlockRecord block(BlockAction action, uint64_t address, uint64_t size = 512, uint64_t stream = 7) {
  BlockRecord r;
  r.allocator = static_cast<uint32_t>(format::BlockAllocator::kPytorch);
  r.action = static_cast<uint32_t>(action);
  r.device = 0;
  r.address = address;
  r.size = size;
  r.stream = stream;
  return r;
}

// The types of the records in the trace's chunks, in file order.
std::vector<int> frame_types(const std::string& path) {
  analyzer::MappedFile file(path);
  const auto bytes = file.bytes();
  const format::HeaderCheck header = format::check_header(bytes);
  EXPECT_TRUE(header.ok) << header.error;
  std::vector<int> types;
  for (std::size_t at = format::kFirstChunkOffset; at + header.header.chunk_size <= bytes.size();
       at += header.header.chunk_size) {
    const uint8_t* chunk = bytes.data() + at;
    uint64_t word = 0;
    std::memcpy(&word, chunk + format::ChunkHeaderLayout::kPublished, sizeof word);
    const uint8_t* p = chunk + 32;  // past the chunk header
    const uint8_t* const end = p + format::published_length(word);
    while (p < end) {
      uint64_t type = 0;
      uint64_t length = 0;
      if (!format::get_varint(&p, end, &type) || !format::get_varint(&p, end, &length)) {
        ADD_FAILURE() << "unreadable record header at byte " << (p - bytes.data());
        return types;
      }
      types.push_back(static_cast<int>(type));
      p += length;
    }
  }
  return types;
}

std::vector<BlockRecord> blocks_read(const std::string& path) {
  analyzer::MappedFile file(path);
  const format::HeaderCheck header = format::check_header(file.bytes());
  EXPECT_TRUE(header.ok) << header.error;
  format::TraceReader reader(file.bytes(), header.header);
  std::vector<BlockRecord> blocks;
  while (auto record = reader.next()) {
    if (const auto* b = std::get_if<BlockRecord>(&*record)) blocks.push_back(*b);
  }
  EXPECT_TRUE(reader.problems().empty());
  return blocks;
}

class FreedAtOnce : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gmt-freed-at-once-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    config_.output_pattern = (dir_ / "trace.gmt").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Kept reachable for LeakSanitizer: a writer is never destroyed, as the runtime's is not.
  TraceWriter& new_writer() {
    static auto* writers = new std::vector<TraceWriter*>();
    writers->push_back(new TraceWriter(config_));
    return *writers->back();
  }
  std::string path() const { return (dir_ / "trace.gmt").string(); }

  // Writes: A freed at once; B requested, then C's completion; D requested, E allocated, then
  // D's completion; F requested and completed with another size; G with another stream; H
  // requested and completed twice.
  void write_cases(TraceWriter& writer) {
    const auto put = [&](BlockRecord r) { writer.record(r); };
    put(block(BlockAction::kAlloc, 0xA00));
    put(block(BlockAction::kFreeRequested, 0xA00));
    put(block(BlockAction::kFreeCompleted, 0xA00));
    put(block(BlockAction::kFreeRequested, 0xB00));
    put(block(BlockAction::kFreeCompleted, 0xC00));
    put(block(BlockAction::kFreeRequested, 0xD00));
    put(block(BlockAction::kAlloc, 0xE00));
    put(block(BlockAction::kFreeCompleted, 0xD00));
    put(block(BlockAction::kFreeRequested, 0xF00));
    put(block(BlockAction::kFreeCompleted, 0xF00, 1024));
    put(block(BlockAction::kFreeRequested, 0x1000));
    put(block(BlockAction::kFreeCompleted, 0x1000, 512, 8));
    put(block(BlockAction::kFreeRequested, 0x1100));
    put(block(BlockAction::kFreeCompleted, 0x1100));
    put(block(BlockAction::kFreeCompleted, 0x1100));
  }

  fs::path dir_;
  Config config_;
};

constexpr int kBlock = static_cast<int>(format::RecordType::kBlock);
constexpr int kFreedAtOnce = static_cast<int>(format::RecordType::kBlockFreedAtOnce);

TEST_F(FreedAtOnce, OnlyTheCompletionRightAfterItsOwnRequestIsTwoBytes) {
  TraceWriter& writer = new_writer();
  write_cases(writer);
  writer.finish();
  std::vector<int> types = frame_types(path());
  // The process and thread records come first; the end record last.
  ASSERT_GE(types.size(), 17u);
  const std::vector<int> blocks(types.end() - 16, types.end() - 1);
  EXPECT_EQ(blocks,
            (std::vector<int>{kBlock, kBlock, kFreedAtOnce, kBlock, kBlock, kBlock, kBlock, kBlock,
                              kBlock, kBlock, kBlock, kBlock, kBlock, kFreedAtOnce, kBlock}));
}

TEST_F(FreedAtOnce, TheReaderGivesTheRequestsBlockAsCompletedAtItsTime) {
  TraceWriter& writer = new_writer();
  write_cases(writer);
  writer.finish();
  const std::vector<BlockRecord> blocks = blocks_read(path());
  ASSERT_EQ(blocks.size(), 15u);
  const BlockRecord& request = blocks[1];
  const BlockRecord& completed = blocks[2];
  EXPECT_EQ(completed.action, static_cast<uint32_t>(BlockAction::kFreeCompleted));
  EXPECT_EQ(completed.time_ns, request.time_ns);
  EXPECT_EQ(completed.thread, request.thread);
  EXPECT_EQ(completed.address, 0xA00u);
  EXPECT_EQ(completed.size, 512u);
  EXPECT_EQ(completed.stream, 7u);
  EXPECT_EQ(completed.allocator, request.allocator);
  EXPECT_EQ(completed.device, 0);
  // Every other record as it was written, in order.
  const std::vector<uint64_t> addresses = {0xA00,  0xA00,  0xA00,  0xB00,  0xC00,
                                           0xD00,  0xE00,  0xD00,  0xF00,  0xF00,
                                           0x1000, 0x1000, 0x1100, 0x1100, 0x1100};
  for (std::size_t i = 0; i < blocks.size(); ++i) EXPECT_EQ(blocks[i].address, addresses[i]) << i;
  EXPECT_EQ(blocks[9].size, 1024u);
  EXPECT_EQ(blocks[11].stream, 8u);
  EXPECT_EQ(blocks[13].action, static_cast<uint32_t>(BlockAction::kFreeCompleted));
  EXPECT_EQ(blocks[14].action, static_cast<uint32_t>(BlockAction::kFreeCompleted));
}

// A bounded trace's checkpoint thread folds records as they come: there, every completion is a
// whole Block record.
TEST_F(FreedAtOnce, ABoundedTraceWritesEveryCompletionWhole) {
  config_.max_size = 64 << 20;
  TraceWriter& writer = new_writer();
  write_cases(writer);
  writer.finish();
  const std::vector<int> types = frame_types(path());
  EXPECT_EQ(std::count(types.begin(), types.end(), kBlock), 15);
  EXPECT_EQ(std::count(types.begin(), types.end(), kFreedAtOnce), 0);
}

}  // namespace
}  // namespace gmt::interpose
