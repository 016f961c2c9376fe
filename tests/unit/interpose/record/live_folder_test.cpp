// SPDX-License-Identifier: Apache-2.0
// A bounded trace's live set, folded from the records read back from the file: the writers'
// streams merged in time order up to the cut, what is published after a fold folded by the next,
// a writer's chunks one after another, and damage reported rather than folded.
#include "interpose/record/live_folder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/unit/chunked_file.h"
#include "tests/unit/trace_bytes.h"

namespace gmt::interpose {
namespace {

using test::alloc_at;
using test::ChunkedFile;
using test::free_at;

constexpr uint32_t kChunk = 4096;

// A trace file on disk whose chunks a LiveFolder maps, rewritten in place as a writer would
// publish more.
class FolderFile {
 public:
  FolderFile() : file_(std::tmpfile()) {}
  ~FolderFile() { std::fclose(file_); }
  int fd() const { return fileno(file_); }
  void write(const ChunkedFile& chunks) {
    const std::vector<uint8_t>& bytes = const_cast<ChunkedFile&>(chunks).bytes();
    ASSERT_EQ(pwrite(fd(), bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  }

 private:
  std::FILE* file_;
};

// Address -> size of what the folder holds live.
std::map<uint64_t, uint64_t> live_of(const LiveFolder& folder) {
  std::map<uint64_t, uint64_t> live;
  folder.live().for_each([&](const format::AllocRecord& a) { live[a.address] = a.size; });
  return live;
}

// Tells `folder` of each writer's chunk at its offset, then hands them over from `fd`.
bool start(LiveFolder& folder, int fd,
           std::initializer_list<std::pair<uint32_t, uint64_t>> chunks) {
  for (const auto& [writer, offset] : chunks) folder.chunk_started(writer, offset);
  std::string why;
  const bool taken = folder.take_started(fd, why);
  EXPECT_TRUE(taken) << why;
  return taken;
}

TEST(LiveFolder, MergesTheWritersInTimeOrderAndStopsAtTheCut) {
  // Writer 1 allocates 0xa000 twice, writer 2 frees it in between, and again after the cut.
  ChunkedFile chunks(kChunk);
  const uint64_t first = chunks.add_chunk(1, 0, 100, alloc_at(10, 0, 0xa000, 64),
                                          alloc_at(30, 0, 0xa000, 128), alloc_at(60, 0, 0xb000, 8));
  const uint64_t second = chunks.add_chunk(2, 0, 101, free_at(20, 0xa000), free_at(40, 0xa000));
  FolderFile file;
  file.write(chunks);
  LiveFolder folder(kChunk);
  ASSERT_TRUE(start(folder, file.fd(), {{1, first}, {2, second}}));
  std::string why;

  // Out of time order, the free at 20 would come before the allocation at 10, and free nothing.
  ASSERT_TRUE(folder.fold(25, why)) << why;
  EXPECT_EQ(live_of(folder), (std::map<uint64_t, uint64_t>{}));
  EXPECT_EQ(folder.folded(), 2u);
  // Writer by writer, the free at 20 would come after the allocation at 30 and free it.
  ASSERT_TRUE(folder.fold(35, why)) << why;
  EXPECT_EQ(live_of(folder), (std::map<uint64_t, uint64_t>{{0xa000, 128}}));
  EXPECT_EQ(folder.folded(), 3u);
  // The records at or after a cut wait for the next fold.
  ASSERT_TRUE(folder.fold(60, why)) << why;
  EXPECT_EQ(live_of(folder), (std::map<uint64_t, uint64_t>{}));
  EXPECT_EQ(folder.folded(), 4u);
  ASSERT_TRUE(folder.fold(61, why)) << why;
  EXPECT_EQ(live_of(folder), (std::map<uint64_t, uint64_t>{{0xb000, 8}}));
  EXPECT_EQ(folder.folded(), 5u);

  // All of it up to 35 in one fold: writer 1's two allocations are not one run.
  LiveFolder at_once(kChunk);
  ASSERT_TRUE(start(at_once, file.fd(), {{1, first}, {2, second}}));
  ASSERT_TRUE(at_once.fold(35, why)) << why;
  EXPECT_EQ(live_of(at_once), (std::map<uint64_t, uint64_t>{{0xa000, 128}}));
}

TEST(LiveFolder, WhatIsPublishedAfterAFoldIsFoldedByTheNext) {
  const auto alloc1 = alloc_at(10, 0, 0xa000, 64);
  const auto alloc2 = alloc_at(20, 0, 0xb000, 32);
  const auto free1 = free_at(30, 0xa000);
  ChunkedFile before(kChunk);
  const uint64_t chunk = before.add_chunk(1, 0, 100, alloc1);
  ChunkedFile after(kChunk);  // the same chunk with two more records published
  ASSERT_EQ(after.add_chunk(1, 0, 100, alloc1, alloc2, free1), chunk);
  FolderFile file;
  file.write(before);
  LiveFolder folder(kChunk);
  ASSERT_TRUE(start(folder, file.fd(), {{1, chunk}}));
  std::string why;
  ASSERT_TRUE(folder.fold(100, why)) << why;
  EXPECT_EQ(live_of(folder), (std::map<uint64_t, uint64_t>{{0xa000, 64}}));

  file.write(after);
  ASSERT_TRUE(folder.fold(100, why)) << why;
  EXPECT_EQ(live_of(folder), (std::map<uint64_t, uint64_t>{{0xb000, 32}}));
  EXPECT_EQ(folder.folded(), 3u);
}

TEST(LiveFolder, AWritersChunksAreReadOneAfterAnotherEachWithItsOwnDeltas) {
  ChunkedFile chunks(kChunk);
  const uint64_t first = chunks.add_chunk(1, 0, 100, alloc_at(10, 0, 0xa000, 64));
  const uint64_t other = chunks.add_chunk(2, 0, 101, alloc_at(15, 0, 0xc000, 16));
  const uint64_t next =
      chunks.add_chunk(1, 1, 100, free_at(20, 0xa000), alloc_at(30, 0, 0xb000, 32));
  FolderFile file;
  file.write(chunks);
  LiveFolder folder(kChunk);
  ASSERT_TRUE(start(folder, file.fd(), {{1, first}, {2, other}}));
  std::string why;
  // Writer 1's next chunk is not known yet: its first is read through, and it waits.
  ASSERT_TRUE(folder.fold(100, why)) << why;
  EXPECT_EQ(live_of(folder), (std::map<uint64_t, uint64_t>{{0xa000, 64}, {0xc000, 16}}));
  folder.writer_ended(2);
  ASSERT_TRUE(start(folder, file.fd(), {{1, next}}));
  ASSERT_TRUE(folder.fold(100, why)) << why;
  EXPECT_EQ(live_of(folder), (std::map<uint64_t, uint64_t>{{0xb000, 32}, {0xc000, 16}}));
  EXPECT_EQ(folder.folded(), 4u);
}

TEST(LiveFolder, DamagedBytesStopTheFoldWithTheChunkNamed) {
  ChunkedFile chunks(kChunk);
  const uint64_t chunk = chunks.add_chunk(1, 0, 100, alloc_at(10, 0, 0xa000, 64));
  // A record type no format has, with a length past the published bytes.
  chunks.bytes()[chunk + format::kChunkHeaderSize] = 0x7f;
  chunks.bytes()[chunk + format::kChunkHeaderSize + 1] = 0x7f;
  FolderFile file;
  file.write(chunks);
  LiveFolder folder(kChunk);
  ASSERT_TRUE(start(folder, file.fd(), {{1, chunk}}));
  std::string why;
  EXPECT_FALSE(folder.fold(100, why));
  EXPECT_NE(why.find("the chunk at byte " + std::to_string(chunk) + " cannot be read back"),
            std::string::npos)
      << why;
  EXPECT_TRUE(live_of(folder).empty());
}

TEST(LiveFolder, AChunkThatCannotBeMappedIsNamed) {
  LiveFolder folder(kChunk);
  folder.chunk_started(1, 4096);
  std::string why;
  EXPECT_FALSE(folder.take_started(-1, why));
  EXPECT_NE(why.find("cannot map the chunk at byte 4096"), std::string::npos) << why;
}

}  // namespace
}  // namespace gmt::interpose
