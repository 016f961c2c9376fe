// SPDX-License-Identifier: Apache-2.0
// Interned stacks: the same frames get the same id from any thread, whether the id comes from
// the thread's own cache or the shared table; different frames never share one, even where
// they fall on the same cache entry; each distinct stack is written once; and after a fork the
// child's table starts again, cached ids included.
#include "interpose/stacks/stack_table.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "analyzer/model/input/mapped_file.h"
#include "format/file_header.h"
#include "format/trace_reader.h"
#include "interpose/config.h"

namespace gmt::interpose {
namespace {

namespace fs = std::filesystem;

struct Table {
  Config config;
  TraceWriter* writer;
  StackTable* stacks;
  explicit Table(const std::string& pattern) {
    config.output_pattern = pattern;
    config.sample_ms = 0;
    writer = new TraceWriter(config);  // never destroyed, as the runtime's
    stacks = new StackTable(*writer);
  }
};

const fs::path& table_dir() {
  static const fs::path dir =
      fs::temp_directory_path() / ("gmt-stacks-" + std::to_string(getpid()));
  return dir;
}

Table& table() {
  static Table* t = [] {
    fs::create_directories(table_dir());
    return new Table((table_dir() / "s.%p.gmt").string());
  }();
  return *t;
}

// The table's trace goes with the test program: the writer lives on (as the runtime's does), its
// folder does not.
class RemoveTableDir : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(table_dir(), ignored);
  }
};
[[maybe_unused]] const auto* const kRemoveTableDir =
    ::testing::AddGlobalTestEnvironment(new RemoveTableDir);

uint32_t intern(const std::vector<uint64_t>& frames, int native) {
  return table().stacks->intern(frames.data(), native, static_cast<int>(frames.size()) - native,
                                [] {});
}

std::vector<uint64_t> stack_of(uint64_t seed, int n) {
  std::vector<uint64_t> frames;
  for (int i = 0; i < n; ++i) frames.push_back(0x400000 + seed * 0x1000 + 16 * i);
  return frames;
}

TEST(StackTable, SameFramesSameIdFromEveryThreadDifferentFramesNever) {
  // 400 stacks: more than a thread's cache holds (256), so many share a cache set; 200 of 100
  // frames, more than its arena holds together; one of 200 frames, more than it caches; the
  // same frames split differently between native and Python are another stack.
  std::vector<std::vector<uint64_t>> stacks;
  for (uint64_t s = 0; s < 400; ++s) stacks.push_back(stack_of(s, 5 + static_cast<int>(s % 7)));
  for (uint64_t s = 400; s < 600; ++s) stacks.push_back(stack_of(s, 100));
  stacks.push_back(stack_of(999, 200));
  std::vector<uint32_t> ids;
  for (const auto& f : stacks) ids.push_back(intern(f, static_cast<int>(f.size())));
  const uint32_t split = intern(stacks[0], 2);
  std::set<uint32_t> distinct(ids.begin(), ids.end());
  distinct.insert(split);
  EXPECT_EQ(distinct.size(), stacks.size() + 1);
  EXPECT_EQ(distinct.count(0), 0u);

  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 2000; ++round) {
        const std::size_t i = static_cast<std::size_t>(round * 7 + t) % stacks.size();
        const auto& f = stacks[i];
        if (intern(f, static_cast<int>(f.size())) != ids[i]) ++mismatches;
        if (intern(stacks[0], 2) != split) ++mismatches;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
  // Again on this thread, where every stack has been cached and evicted by others.
  for (std::size_t i = 0; i < stacks.size(); ++i) {
    EXPECT_EQ(intern(stacks[i], static_cast<int>(stacks[i].size())), ids[i]) << i;
  }

  // Each stack was written once.
  const std::string path = table().writer->path();
  analyzer::MappedFile file(path);
  const format::HeaderCheck header = format::check_header(file.bytes());
  ASSERT_TRUE(header.ok) << header.error;
  format::TraceReader reader(file.bytes(), header.header);
  std::multiset<uint32_t> written;
  while (auto record = reader.next()) {
    if (const auto* s = std::get_if<format::StackRecord>(&*record)) written.insert(s->id);
  }
  EXPECT_EQ(written, std::multiset<uint32_t>(distinct.begin(), distinct.end()));
}

TEST(StackTable, AForkedChildStartsAgainWithItsCacheForgotten) {
#if defined(__SANITIZE_THREAD__)
  // before_fork() holds every shard's lock at once, more than ThreadSanitizer's deadlock
  // detector can follow (64): it aborts. The normal and ASan builds run this.
  GTEST_SKIP() << "ThreadSanitizer cannot follow 65 locks held at once";
#endif
  const std::vector<uint64_t> frames = stack_of(500, 6);
  const uint32_t parent_id = intern(frames, 6);
  EXPECT_EQ(intern(frames, 6), parent_id);  // now in this thread's cache
  table().stacks->before_fork();
  table().stacks->after_fork_in_child();  // as the child would
  // The child's trace knows no stack: the first one is 1 again, and is written again.
  EXPECT_EQ(intern(frames, 6), 1u);
  EXPECT_EQ(intern(stack_of(501, 6), 6), 2u);
  EXPECT_EQ(intern(frames, 6), 1u);
}

}  // namespace
}  // namespace gmt::interpose
