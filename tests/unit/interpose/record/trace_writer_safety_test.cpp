// SPDX-License-Identifier: Apache-2.0
// The writer under what a program may do around it (#21): a signal handler that records while
// the thread is recording, a program that takes the trace's descriptor, a full disk. The file
// stays readable and says what happened; the program's own file is never touched.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "analyzer/model/input/mapped_file.h"
#include "format/file_header.h"
#include "format/recording_end.h"
#include "format/trace_reader.h"
#include "interpose/config.h"
#include "interpose/record/trace_writer.h"

namespace gmt::interpose {
namespace {

namespace fs = std::filesystem;

struct ReadBack {
  uint64_t frees_by_address[2] = {0, 0};  // address 1: the main loop's, 2: the handler's
  uint64_t dropped = 0;                   // from the dropped-records notes
  std::vector<std::string> notes;
  std::size_t problems = 0;
  std::string stop_reason;  // the header's
};

ReadBack read_back(const std::string& path) {
  ReadBack out;
  analyzer::MappedFile file(path);
  out.stop_reason = format::read_stop_reason(file.bytes());
  const format::HeaderCheck header = format::check_header(file.bytes());
  EXPECT_TRUE(header.ok) << header.error;
  format::TraceReader reader(file.bytes(), header.header);
  while (auto record = reader.next()) {
    if (const auto* f = std::get_if<format::FreeRecord>(&*record)) {
      if (f->address == 1 || f->address == 2) ++out.frees_by_address[f->address - 1];
    } else if (const auto* n = std::get_if<format::NoteRecord>(&*record)) {
      out.notes.push_back(n->text);
      if (n->text.starts_with(format::kDroppedNote))
        out.dropped += std::stoull(n->text.substr(format::kDroppedNote.size()));
    }
  }
  out.problems = reader.problems().size();
  return out;
}

class TraceWriterSafety : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gmt-writer-safety-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    config_.output_pattern = (dir_ / "trace.gmt").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A writer is never destroyed, as the runtime's is not; each is kept reachable from here so
  // that LeakSanitizer does not report it.
  TraceWriter* new_writer() {
    static auto* writers = new std::vector<TraceWriter*>();
    writers->push_back(new TraceWriter(config_));
    return writers->back();
  }

  void free_of(TraceWriter& writer, uint64_t address) {
    format::FreeRecord rec;
    rec.address = address;
    writer.record(rec);
  }

  fs::path dir_;
  Config config_;
};

TraceWriter* g_writer = nullptr;
volatile sig_atomic_t g_handler_calls = 0;

// Enough signals to land inside records many times. The handler stops the timer then: a build
// where a handler takes longer than the timer's period (ThreadSanitizer on a loaded machine)
// would otherwise spend all its time in handlers and never finish the loop.
constexpr sig_atomic_t kHandlerCalls = 20000;

void record_from_handler(int) {
  format::FreeRecord rec;
  rec.address = 2;
  g_writer->record(rec);
  g_handler_calls = g_handler_calls + 1;
  if (g_handler_calls == kHandlerCalls) {
    itimerval off{};
    setitimer(ITIMER_REAL, &off, nullptr);  // async-signal-safe
  }
}

// Signals land while the thread is in the middle of a record: those records are dropped and
// counted, never written over the one being written; every other record is in the file once.
TEST_F(TraceWriterSafety, RecordsFromASignalHandlerInsideTheWriterAreCountedNotWritten) {
  auto* writer = new_writer();
  // The trace exists before the first signal: creating it (names, paths) allocates, which a
  // handler's hook cannot do safely; what is tested is a handler landing inside a record.
  free_of(*writer, 1);
  g_writer = writer;
  g_handler_calls = 0;
  struct sigaction action {};
  action.sa_handler = record_from_handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  struct sigaction previous {};
  ASSERT_EQ(sigaction(SIGALRM, &action, &previous), 0);
  itimerval timer{};
  timer.it_interval.tv_usec = 20;
  timer.it_value.tv_usec = 20;
  ASSERT_EQ(setitimer(ITIMER_REAL, &timer, nullptr), 0);
  constexpr uint64_t kMain = 400000;
  for (uint64_t i = 0; i < kMain; ++i) free_of(*writer, 1);
  timer = itimerval{};
  setitimer(ITIMER_REAL, &timer, nullptr);
  sigaction(SIGALRM, &previous, nullptr);
  free_of(*writer, 1);  // writes the note for anything dropped at the very end
  writer->finish();

  const ReadBack back = read_back(writer->path());
  EXPECT_EQ(back.problems, 0u);
  EXPECT_EQ(back.frees_by_address[0], kMain + 2);
  EXPECT_GT(g_handler_calls, 0);
  EXPECT_EQ(back.frees_by_address[1] + back.dropped, static_cast<uint64_t>(g_handler_calls))
      << back.frees_by_address[1] << " written, " << back.dropped << " dropped in "
      << back.notes.size() << " notes";
}

// The program closes the trace's descriptor and puts a file of its own at that number: the
// writer opens the trace again by its name, and the program's file gets nothing.
TEST_F(TraceWriterSafety, DescriptorTakenByTheProgramIsLeftAloneAndTheTraceReopened) {
  auto* writer = new_writer();
  free_of(*writer, 1);
  int trace_fd = -1;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    if (fs::read_symlink(entry.path(), error) == fs::path(writer->path()))
      trace_fd = std::stoi(entry.path().filename().string());
  }
  ASSERT_GE(trace_fd, 900) << "the trace's descriptor is moved above the program's numbers";
  EXPECT_EQ(fcntl(trace_fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  const std::string own = (dir_ / "own.bin").string();
  const int mine = open(own.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(mine, 0);
  ASSERT_EQ(write(mine, "program", 7), 7);
  ASSERT_EQ(dup2(mine, trace_fd), trace_fd);
  constexpr uint64_t kRecords = 1000000;  // several growths
  for (uint64_t i = 0; i < kRecords; ++i) free_of(*writer, 1);
  writer->finish();
  EXPECT_EQ(fs::file_size(own), 7u);
  EXPECT_EQ(fcntl(trace_fd, F_GETFD), 0) << "the program's descriptor is still open";
  close(trace_fd);
  close(mine);
  const ReadBack back = read_back(writer->path());
  EXPECT_EQ(back.problems, 0u);
  EXPECT_EQ(back.frees_by_address[0], kRecords + 1);
  EXPECT_TRUE(back.notes.empty());
}

// A full disk (the test seam): a smaller last growth, then a stop note and the header's reason.
TEST_F(TraceWriterSafety, FullDiskStopsWithANoteAndTheHeaderReason) {
  config_.test_enospc_at = 300 * 1024;
  auto* writer = new_writer();
  for (int i = 0; i < 1000000; ++i) free_of(*writer, 1);
  writer->finish();
  EXPECT_EQ(fs::file_size(writer->path()), 4096u + 4 * TraceWriter::kChunkSize);
  const ReadBack back = read_back(writer->path());
  EXPECT_EQ(back.problems, 0u);
  const std::string why = "the disk is full (No space left on device) at byte 266240";
  EXPECT_EQ(back.stop_reason, why);
  ASSERT_EQ(back.notes.size(), 1u);
  EXPECT_EQ(back.notes[0], std::string(format::kStoppedNote) + why);
  EXPECT_GT(back.frees_by_address[0], 10000u);
  EXPECT_LT(back.frees_by_address[0], 1000000u);
}

TEST_F(TraceWriterSafety, NoRoomForAChunkLeavesOnlyTheHeaderWithTheReason) {
  config_.test_enospc_at = 8192;
  auto* writer = new_writer();
  free_of(*writer, 1);
  free_of(*writer, 1);
  writer->finish();
  EXPECT_EQ(fs::file_size(writer->path()), 4096u);
  analyzer::MappedFile file(writer->path());
  EXPECT_EQ(format::read_stop_reason(file.bytes()),
            "the disk is full (No space left on device) at byte 4096");
}

}  // namespace
}  // namespace gmt::interpose
