// SPDX-License-Identifier: Apache-2.0
// Our own unwinder against libunwind's: the same frames through frames with and without a frame
// pointer, frames of variable size (alloca) and on another thread; a remembered walk is used only
// while every stack word it read still holds what it held, and a caller that differs at the same
// stack pointer is walked again; a walk ends after the first frame in a stop module; a signal
// frame makes it give up, and NativeStack then still unwinds through it by libunwind.
#include "interpose/stacks/stack_walker.h"

#include <alloca.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <thread>
#include <vector>

#include "interpose/stacks/frame_rules.h"
#include "interpose/stacks/native_stack.h"

extern "C" void gmt_walk_start_registers(void* start);

namespace gmt::interpose {
namespace {

using Backtrace = int (*)(void**, int);

Backtrace libunwind_backtrace() {
  static Backtrace fn = [] {
    void* lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    return lib != nullptr ? reinterpret_cast<Backtrace>(dlsym(lib, "unw_backtrace")) : nullptr;
  }();
  return fn;
}

struct Both {
  std::vector<uint64_t> ours;    // from the return address into the caller of capture_both
  std::vector<uint64_t> theirs;  // the same
  StackWalker::Counts counts;
  uint64_t frame_address = 0;
};

StackWalker* g_walker = nullptr;  // the test's walker, for the chains below
Both* g_both = nullptr;

// Walks, then asks libunwind, from one frame: ours[0] is the return address into walk(), so
// the frames from the caller of this function on are ours[2...] and theirs[1...].
[[gnu::noinline]] void capture_both() {
  uint64_t frames[128];
  const int n = g_walker->walk(frames, 128, nullptr);
  ASSERT_GE(n, 3);
  void* raw[128];
  const int m = libunwind_backtrace()(raw, 128);
  ASSERT_GE(m, 2);
  g_both->ours.assign(frames + 2, frames + n);
  g_both->theirs.clear();
  for (int i = 1; i < m; ++i) g_both->theirs.push_back(reinterpret_cast<uint64_t>(raw[i]));
  g_both->counts = g_walker->thread_counts();
  g_both->frame_address = reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  asm volatile("" ::: "memory");
}

using Operation = void (*)();

[[gnu::noinline]] int plain_chain(int depth, Operation op = capture_both) {
  int below = 0;
  if (depth > 0)
    below = plain_chain(depth - 1, op);
  else
    op();
  asm volatile("" : "+r"(below));
  return below + 1;
}

[[gnu::noinline, gnu::optimize("no-omit-frame-pointer")]] int framed_chain(int depth) {
  int below = 0;
  if (depth > 0)
    below = framed_chain(depth - 1);
  else
    capture_both();
  asm volatile("" : "+r"(below));
  return below + 1;
}

// A frame of variable size: its CFA is rbp-based even without frame pointers.
[[gnu::noinline]] int alloca_chain(int depth, int bytes) {
  auto* scratch = static_cast<char*>(alloca(static_cast<std::size_t>(bytes)));
  std::memset(scratch, depth, static_cast<std::size_t>(bytes));
  asm volatile("" : : "r"(scratch) : "memory");
  int below = 0;
  if (depth > 0)
    below = alloca_chain(depth - 1, bytes);
  else
    capture_both();
  asm volatile("" : "+r"(below));
  return below + scratch[0];
}

class StackWalkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (libunwind_backtrace() == nullptr) GTEST_SKIP() << "libunwind.so.8 is not installed";
    g_walker = &walker_;
    g_both = &both_;
  }
  StackWalker walker_;
  Both both_;
};

TEST_F(StackWalkerTest, WalksTheSameFramesAsLibunwind) {
  plain_chain(12);
  ASSERT_GE(both_.theirs.size(), 14u);
  EXPECT_EQ(both_.ours, both_.theirs);
  framed_chain(9);
  ASSERT_GE(both_.theirs.size(), 11u);
  EXPECT_EQ(both_.ours, both_.theirs);
  alloca_chain(7, 200);
  ASSERT_GE(both_.theirs.size(), 9u);
  EXPECT_EQ(both_.ours, both_.theirs);
  EXPECT_EQ(both_.counts.given_up, 0u);
}

TEST_F(StackWalkerTest, WalksAnotherThreadsStackToItsStart) {
  std::thread([] { framed_chain(5); }).join();
  ASSERT_GE(both_.theirs.size(), 7u);
  EXPECT_EQ(both_.ours, both_.theirs);
  EXPECT_EQ(both_.counts.walked, 1u);
  EXPECT_EQ(both_.counts.given_up, 0u);
}

TEST_F(StackWalkerTest, ASecondWalkFromTheSamePlaceIsRemembered) {
  std::vector<Both> walks;
  volatile int times = 2;  // not unrolled: one call site, the same stack twice
  for (int i = 0; i < times; ++i) {
    plain_chain(6);
    walks.push_back(both_);
  }
  EXPECT_EQ(walks[0].counts.walked, 1u);
  EXPECT_EQ(walks[0].counts.remembered, 0u);
  EXPECT_EQ(walks[1].ours, walks[0].ours);
  EXPECT_EQ(walks[1].ours, walks[1].theirs);
  EXPECT_EQ(walks[1].counts.walked, 1u);
  EXPECT_EQ(walks[1].counts.remembered, 1u);
}

// Two callers with frames of one size, called from one place: the walk below them starts at
// the same stack pointer from the same instruction, and only the words it read tell them apart.
[[gnu::noinline]] void caller_a() {
  volatile int mark = 1;
  capture_both();
  mark = mark + 1;
}
[[gnu::noinline]] void caller_b() {
  volatile int mark = 2;
  capture_both();
  mark = mark + 2;
}
[[gnu::noinline]] void call_via(Operation caller) {
  caller();
  asm volatile("" ::: "memory");
}

TEST_F(StackWalkerTest, AWalkWhoseStackChangedIsWalkedAgain) {
  std::vector<Both> walks;
  for (Operation caller : {caller_a, caller_b, caller_b, caller_a}) {
    call_via(caller);
    walks.push_back(both_);
  }
  ASSERT_EQ(walks[1].frame_address, walks[0].frame_address)
      << "the two walks must start at one stack pointer";
  EXPECT_EQ(walks[1].ours, walks[1].theirs);
  ASSERT_EQ(walks[1].ours.size(), walks[0].ours.size());
  EXPECT_NE(walks[1].ours[0], walks[0].ours[0]);  // the return address into the caller
  EXPECT_TRUE(
      std::equal(walks[1].ours.begin() + 1, walks[1].ours.end(), walks[0].ours.begin() + 1));
  EXPECT_EQ(walks[1].counts.walked, 2u);
  // Both walks are kept, side by side: each caller's next walk is remembered.
  EXPECT_EQ(walks[2].ours, walks[1].ours);
  EXPECT_EQ(walks[2].counts.walked, 2u);
  EXPECT_EQ(walks[2].counts.remembered, 1u);
  EXPECT_EQ(walks[3].ours, walks[0].ours);
  EXPECT_EQ(walks[3].counts.walked, 2u);
  EXPECT_EQ(walks[3].counts.remembered, 2u);
}

TEST_F(StackWalkerTest, FramesOfAnotherSizeAreWalkedAgain) {
  std::vector<Both> walks;
  for (int bytes : {64, 64, 96}) {
    alloca_chain(3, bytes);
    walks.push_back(both_);
  }
  EXPECT_EQ(walks[0].ours, walks[0].theirs);
  EXPECT_EQ(walks[1].ours, walks[0].ours);
  EXPECT_EQ(walks[1].counts.remembered, 1u);
  EXPECT_EQ(walks[2].ours, walks[2].theirs);
  EXPECT_EQ(walks[2].counts.walked, 2u);
  EXPECT_EQ(walks[2].counts.remembered, 1u);
}

uint64_t g_stop_after = 0;
int g_stopped_count = 0;
uint64_t g_stopped_last = 0;

[[gnu::noinline]] void walk_with_stop() {
  StackWalker::StopModules stop;
  stop.ranges[0] = {g_stop_after, g_stop_after + 1};
  stop.count = 1;
  uint64_t frames[128];
  g_stopped_count = g_walker->walk(frames, 128, &stop);
  g_stopped_last = g_stopped_count > 0 ? frames[g_stopped_count - 1] : 0;
}

TEST_F(StackWalkerTest, AWalkEndsAfterTheFirstFrameInAStopModule) {
  plain_chain(8);
  // The return address into plain_chain from its operation: the same below walk_with_stop.
  g_stop_after = both_.ours[0];
  plain_chain(8, walk_with_stop);
  EXPECT_EQ(g_stopped_count, 3);  // walk(), walk_with_stop, plain_chain
  EXPECT_EQ(g_stopped_last, g_stop_after);
}

uint64_t g_short[5];
int g_short_count = 0;

[[gnu::noinline]] void walk_five() {
  g_short_count = g_walker->walk(g_short, 5, nullptr);
  capture_both();
}

TEST_F(StackWalkerTest, AWalkEndsAtMaxFrames) {
  plain_chain(10, walk_five);
  ASSERT_EQ(g_short_count, 5);
  // walk(), walk_five, then plain_chain's frames: the same as the full walk's from there.
  ASSERT_GE(both_.ours.size(), 3u);
  EXPECT_EQ(g_short[2], both_.ours[0]);
  EXPECT_EQ(g_short[3], both_.ours[1]);
  EXPECT_EQ(g_short[4], both_.ours[2]);
}

TEST(FrameRules, ReadTheRulesOfAFrameWithAndWithoutAFramePointer) {
  const FrameRule leaf = find_frame_rule(reinterpret_cast<uint64_t>(&gmt_walk_start_registers));
  EXPECT_EQ(leaf.kind, FrameRule::Kind::kStep);
  EXPECT_FALSE(leaf.cfa_is_rbp);
  EXPECT_EQ(leaf.cfa_offset, 8);
  EXPECT_EQ(leaf.rbp_offset, 0);

  if (libunwind_backtrace() == nullptr) GTEST_SKIP() << "libunwind.so.8 is not installed";
  StackWalker walker;
  Both both;
  g_walker = &walker;
  g_both = &both;
  framed_chain(0);
  const FrameRule framed = find_frame_rule(both.ours[0] - 1);
  EXPECT_EQ(framed.kind, FrameRule::Kind::kStep);
  EXPECT_TRUE(framed.cfa_is_rbp);
  EXPECT_EQ(framed.cfa_offset, 16);
  EXPECT_EQ(framed.rbp_offset, -16);

  EXPECT_EQ(find_frame_rule(0).kind, FrameRule::Kind::kUnknown);  // in no module
}

int g_handler_walks[2] = {};
StackWalker::Counts g_handler_counts;
int g_handler_native = 0;
bool g_handler_reached_raiser = false;
const void* g_raiser_module = nullptr;

void walk_in_handler(int) {
  uint64_t frames[128];
  // Twice from one place: the second time, the walk that gave up is remembered as such.
  volatile int times = 2;
  for (int i = 0; i < times; ++i) g_handler_walks[i] = g_walker->walk(frames, 128, nullptr);
  g_handler_counts = g_walker->thread_counts();
  NativeStack native;
  g_handler_native = native.capture(frames, 128);
  for (int i = 0; i < g_handler_native; ++i) {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(frames[i]), &info) != 0 && info.dli_fbase == g_raiser_module)
      g_handler_reached_raiser = true;
  }
}

[[gnu::noinline]] void raise_here() {
  raise(SIGUSR1);
  asm volatile("" ::: "memory");
}

TEST_F(StackWalkerTest, AHandlerOnAnAlternateStackIsLeftToLibunwind) {
  std::vector<char> alternate(1 << 16);
  stack_t stack{};
  stack_t old_stack{};
  stack.ss_sp = alternate.data();
  stack.ss_size = alternate.size();
  ASSERT_EQ(sigaltstack(&stack, &old_stack), 0);
  Dl_info self{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&raise_here), &self), 0);
  g_raiser_module = self.dli_fbase;
  g_handler_reached_raiser = false;
  struct sigaction action {};
  struct sigaction old {};
  action.sa_handler = walk_in_handler;
  action.sa_flags = SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &action, &old), 0);
  raise_here();
  sigaction(SIGUSR1, &old, nullptr);
  sigaltstack(&old_stack, nullptr);
  // Outside the thread's own stack the walker does not read: both walks give up at once.
  EXPECT_EQ(g_handler_walks[0], -1);
  EXPECT_EQ(g_handler_walks[1], -1);
  EXPECT_EQ(g_handler_counts.given_up, 2u);
  EXPECT_GE(g_handler_native, 3);
  EXPECT_TRUE(g_handler_reached_raiser);
}

TEST_F(StackWalkerTest, ASignalFrameIsLeftToLibunwind) {
  Dl_info self{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&raise_here), &self), 0);
  g_raiser_module = self.dli_fbase;
  struct sigaction action {};
  struct sigaction old {};
  action.sa_handler = walk_in_handler;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &action, &old), 0);
  raise_here();
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_EQ(g_handler_walks[0], -1);
  EXPECT_EQ(g_handler_walks[1], -1);
  EXPECT_EQ(g_handler_counts.given_up, 2u);
  EXPECT_EQ(g_handler_counts.walked + g_handler_counts.remembered, 0u);
  // NativeStack drops the leading frames of its own module (here, this test's): what it keeps
  // starts in the C library's signal return and reaches back into this test, past the signal.
  EXPECT_GE(g_handler_native, 3);
  EXPECT_TRUE(g_handler_reached_raiser);
}

}  // namespace
}  // namespace gmt::interpose
