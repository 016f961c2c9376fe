// SPDX-License-Identifier: Apache-2.0
// The in-process recorder under many threads at once: every allocation, free, phase and sample
// recorded from eight threads (and the sampler's own) is in the file exactly once. Built a second
// time with ThreadSanitizer (scripts/test.sh), which turns any data race here into a failure.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "analyzer/model/input/mapped_file.h"
#include "format/chunk.h"
#include "format/file_header.h"
#include "format/record_decoder.h"
#include "format/trace_reader.h"
#include "interpose/config.h"
#include "interpose/record/event_recorder.h"
#include "interpose/record/phase_recorder.h"
#include "interpose/record/trace_writer.h"
#include "interpose/sampler/driver_views.h"
#include "interpose/sampler/sampler.h"

namespace gmt::interpose {
namespace {

namespace fs = std::filesystem;
using format::MemoryKind;

// A driver that always answers: 16 GiB per device, a quarter of it free.
class StubDriverViews final : public DriverViews {
 public:
  std::string pci_bus_id(int device) override {
    return "0000:" + std::to_string(10 * (device + 1)) + ":00.0";
  }
  uint64_t total_bytes(int) override { return 16ull << 30; }
  void read(int, bool, bool, format::SampleRecord& sample) override {
    sample.driver_total = 16ull << 30;
    sample.driver_free = 4ull << 30;
    sample.present |= format::SampleField::kDriverFree | format::SampleField::kDriverTotal;
  }
  void lock_teardown() override {}
  void unlock_teardown() override {}
};

// The recorder as the runtime holds it: never destroyed (the sampler registers an exit handler).
struct Recorder {
  Config config;
  TraceWriter* writer;
  StubDriverViews* views;
  Sampler* sampler;
  PhaseRecorder* phases;
  EventRecorder* events;

  explicit Recorder(const std::string& pattern, uint64_t max_size = 0) {
    config.output_pattern = pattern;
    config.max_size = max_size;
    config.stacks = StackMode::kNone;
    config.sample_ms = 2;
    writer = new TraceWriter(config);
    views = new StubDriverViews;
    sampler = new Sampler(*writer, config, *views);
    phases = new PhaseRecorder(*writer);
    events = new EventRecorder(*writer, config, *sampler, *phases);
  }
};

std::map<std::size_t, uint64_t> count_records(const std::string& path, uint64_t& pushes,
                                              uint64_t& pops) {
  analyzer::MappedFile file(path);
  const format::HeaderCheck header = format::check_header(file.bytes());
  EXPECT_TRUE(header.ok) << header.error;
  format::TraceReader reader(file.bytes(), header.header);
  std::map<std::size_t, uint64_t> counts;
  uint64_t records = 0;
  while (auto record = reader.next()) {
    ++records;
    ++counts[record->index()];
    if (const auto* p = std::get_if<format::PhaseRecord>(&*record)) {
      const auto action = static_cast<format::PhaseAction>(p->action);
      if (action == format::PhaseAction::kPush) ++pushes;
      if (action == format::PhaseAction::kPop) ++pops;
    }
  }
  EXPECT_TRUE(reader.problems().empty());
  EXPECT_EQ(reader.expected_records(), records);  // from the chunks' headers
  return counts;
}

// Every chunk's header counts the records in its published bytes (format 4.1): checked against
// a count of the records themselves. Returns how many chunks were checked.
std::size_t check_chunk_counts(const std::string& path) {
  analyzer::MappedFile file(path);
  const std::span<const uint8_t> bytes = file.bytes();
  const uint32_t chunk_size = format::check_header(bytes).header.chunk_size;
  using L = format::ChunkHeaderLayout;
  std::size_t chunks = 0;
  for (uint64_t off = format::kFirstChunkOffset; off + chunk_size <= bytes.size();
       off += chunk_size) {
    uint32_t magic;
    uint64_t published, counted;
    std::memcpy(&magic, bytes.data() + off + L::kMagic, sizeof magic);
    std::memcpy(&published, bytes.data() + off + L::kPublished, sizeof published);
    std::memcpy(&counted, bytes.data() + off + L::kCounted, sizeof counted);
    if (magic != format::kChunkMagic) continue;
    ++chunks;
    const uint32_t length = format::published_length(published);
    EXPECT_EQ(format::counted_length(counted), length) << "chunk at " << off;
    EXPECT_EQ(format::counted_records(counted), format::RecordDecoder::count_records(bytes.subspan(
                                                    off + format::kChunkHeaderSize, length)))
        << "chunk at " << off;
  }
  return chunks;
}

// Thread `t`'s `pairs` allocations of 2 MiB, each freed four later (allocation i takes the slot
// of i - 4 among the thread's own few addresses), all freed at the end; `before(i)` and
// `after(i)` run around allocation i.
template <class Before, class After>
void allocate_and_free(EventRecorder& events, int t, int pairs, int device, uint64_t context,
                       Before before, After after) {
  const auto address = [t](int i) {
    return (static_cast<uint64_t>(t + 1) << 32) + static_cast<uint64_t>(i % 4) * (2u << 20);
  };
  for (int i = 0; i < pairs; ++i) {
    before(i);
    if (i >= 4) events.freeing(format::Api::kCuMemFree, address(i));
    events.allocation(0, device, context, MemoryKind::kDevice, format::Api::kCuMemAlloc, address(i),
                      2u << 20);
    after(i);
  }
  for (int i = pairs - 4; i < pairs; ++i) events.freeing(format::Api::kCuMemFree, address(i));
}

template <class R>
std::size_t index_of() {
  return format::Record(R{}).index();
}

TEST(RecorderConcurrency, EightThreadsAndTheSamplerLoseNothing) {
  const fs::path dir = fs::temp_directory_path() / ("gmt-recorder-" + std::to_string(getpid()));
  fs::create_directories(dir);
  static Recorder* recorder = new Recorder((dir / "t.%p.gmt").string());
  constexpr int kThreads = 8;
  constexpr int kPairs = 4000;

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      EventRecorder& events = *recorder->events;
      PhaseRecorder& phases = *recorder->phases;
      const int device = t % 2;
      const uint64_t context = 0x1000 + static_cast<uint64_t>(device);
      const uint32_t step = phases.name_id("step " + std::to_string(t % 3));
      allocate_and_free(
          events, t, kPairs, device, context,
          [&](int i) {
            if (i % 100 == 0) phases.push(0, step);
          },
          [&](int i) {
            if (i % 100 == 99) phases.pop(0);
            if (i % 1000 == 0) recorder->sampler->request(format::SampleReason::kHighWater);
          });
    });
  }
  for (std::thread& t : threads) t.join();
  recorder->sampler->stop();
  recorder->writer->finish();

  const std::string path = recorder->writer->path();
  ASSERT_FALSE(path.empty());
  uint64_t pushes = 0, pops = 0;
  auto counts = count_records(path, pushes, pops);
  EXPECT_EQ(counts[index_of<format::AllocRecord>()], uint64_t{kThreads} * kPairs);
  EXPECT_EQ(counts[index_of<format::FreeRecord>()], uint64_t{kThreads} * kPairs);
  EXPECT_EQ(counts[index_of<format::ContextRecord>()], 2u);
  EXPECT_EQ(counts[index_of<format::DeviceRecord>()], 2u);
  EXPECT_GE(counts[index_of<format::SampleRecord>()], 4u);  // first and last, per device
  EXPECT_EQ(counts[index_of<format::NameRecord>()], 3u);
  EXPECT_EQ(pushes, uint64_t{kThreads} * kPairs / 100);
  EXPECT_EQ(pops, pushes);
  EXPECT_EQ(counts[index_of<format::EndRecord>()], 1u);
  EXPECT_GT(check_chunk_counts(path), uint64_t{kThreads});  // each thread filled several
  fs::remove_all(dir);
}

// A bounded trace written by more threads than its limit has chunks for, in a burst faster than
// the checkpoints: past their budget the threads share one chunk (under a lock), and a writer
// that needs a chunk past the limit waits for checkpoints to make one reusable (one was not
// always enough: on one CPU the file grew by a chunk in 13 runs of 30). The file stays within
// its limit and reads whole; under ThreadSanitizer any race of that path fails.
TEST(RecorderConcurrency, ThirtyTwoThreadsShareChunksWithinABound) {
  const fs::path dir = fs::temp_directory_path() / ("gmt-bounded-" + std::to_string(getpid()));
  fs::create_directories(dir);
  constexpr uint64_t kLimit = 1u << 20;
  static Recorder* recorder = new Recorder((dir / "t.%p.gmt").string(), kLimit);
  constexpr int kThreads = 32;
  constexpr int kPairs = 3000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      EventRecorder& events = *recorder->events;
      allocate_and_free(
          events, t, kPairs, 0, 0x1000, [](int) {}, [](int) {});
    });
  }
  for (std::thread& t : threads) t.join();
  recorder->sampler->stop();
  recorder->writer->finish();
  const std::string path = recorder->writer->path();
  ASSERT_FALSE(path.empty());
  EXPECT_LE(fs::file_size(path), kLimit);
  analyzer::MappedFile file(path);
  const format::HeaderCheck header = format::check_header(file.bytes());
  ASSERT_TRUE(header.ok) << header.error;
  format::TraceReader reader(file.bytes(), header.header);
  uint64_t ends = 0;
  while (auto record = reader.next()) {
    if (std::holds_alternative<format::EndRecord>(*record)) ++ends;
  }
  EXPECT_EQ(ends, 1u);
  for (const format::ReadProblem& problem : reader.problems())
    ADD_FAILURE() << problem.offset << ": " << problem.reason;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gmt::interpose
