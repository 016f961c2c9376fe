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
#include <string>
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

// A frame pointer in a function whatever the build's flags: GCC's attribute. Clang has none; its
// build here (the sanitizers') keeps frame pointers in every function.
#if defined(__clang__)
#define GMT_FRAMED
#else
#define GMT_FRAMED __attribute__((optimize("no-omit-frame-pointer")))
#endif

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

[[gnu::noinline]] GMT_FRAMED int framed_chain(int depth) {
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
#if defined(__SANITIZE_THREAD__)
  // libunwind's per-thread cache is freed as the thread ends, after ThreadSanitizer has let
  // the thread go: its lock then crashes in ThreadSanitizer's runtime.
  GTEST_SKIP() << "libunwind on a thread that ends crashes under ThreadSanitizer";
#endif
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

// A chain whose every frame keeps a frame pointer: each step of a walk through it uses the rbp
// its callee saved. Each level notes its frame's address, where it saved its caller's rbp.
constexpr int kDeepFramed = 40;
uint64_t g_frame_address[kDeepFramed + 1];

[[gnu::noinline]] GMT_FRAMED int deep_framed(int depth, Operation op) {
  g_frame_address[depth] = reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  int below = 0;
  if (depth > 0)
    below = deep_framed(depth - 1, op);
  else
    op();
  asm volatile("" : "+r"(below));
  return below + 1;
}

std::vector<StackWalker::Counts> g_tamper_counts;
std::vector<int> g_tamper_frames;

// Walks 30 frames up the chain: twice, then with one saved rbp 20 levels up changed (the walk
// must see it: it is walked again), then with it put back (remembered again).
[[gnu::noinline]] void walk_tampered() {
  uint64_t frames[30];
  auto* saved = reinterpret_cast<uint64_t*>(g_frame_address[20]);
  const uint64_t original = *saved;
  for (int round = 0; round < 4; ++round) {
    if (round == 2) *saved = original + 64;
    if (round == 3) *saved = original;
    g_tamper_frames.push_back(g_walker->walk(frames, 30, nullptr));
    g_tamper_counts.push_back(g_walker->thread_counts());
    asm volatile("" ::: "memory");
  }
}

TEST_F(StackWalkerTest, ASavedFramePointerThatChangedIsSeen) {
  deep_framed(kDeepFramed, walk_tampered);
  ASSERT_EQ(g_tamper_counts.size(), 4u);
  EXPECT_EQ(g_tamper_frames[0], 30);
  EXPECT_EQ(g_tamper_counts[0].walked, 1u);
  EXPECT_EQ(g_tamper_counts[1].remembered, 1u);
  EXPECT_EQ(g_tamper_counts[2].walked + g_tamper_counts[2].given_up, 2u);
  EXPECT_EQ(g_tamper_counts[2].remembered, 1u);
  EXPECT_EQ(g_tamper_frames[3], 30);
  EXPECT_EQ(g_tamper_counts[3].remembered, 2u);
}

TEST_F(StackWalkerTest, AnUnloadedLibraryMakesEveryThreadWalkAgain) {
  std::vector<Both> walks;
  volatile int times = 3;
  for (int i = 0; i < times; ++i) {
    if (i == 2) walker_.modules_unloaded();
    plain_chain(4);
    walks.push_back(both_);
  }
  EXPECT_EQ(walks[1].counts.remembered, 1u);
  EXPECT_EQ(walks[2].ours, walks[0].ours);
  EXPECT_EQ(walks[2].counts.walked, 2u);  // walked again: its walk was forgotten
  EXPECT_EQ(walks[2].counts.remembered, 1u);
}

uint64_t g_short[5];
int g_short_count = 0;

// capture_both() is not its last call (a tail call would take this frame off the stack in an
// optimized build and leave it in a sanitized one).
[[gnu::noinline]] void walk_five() {
  g_short_count = g_walker->walk(g_short, 5, nullptr);
  capture_both();
  asm volatile("" ::: "memory");
}

TEST_F(StackWalkerTest, AWalkEndsAtMaxFrames) {
  plain_chain(10, walk_five);
  ASSERT_EQ(g_short_count, 5);
  // walk(), walk_five, then plain_chain's frames: the full walk's from plain_chain on (its
  // first frame is the return into walk_five from capture_both).
  ASSERT_GE(both_.ours.size(), 4u);
  EXPECT_EQ(g_short[2], both_.ours[1]);
  EXPECT_EQ(g_short[3], both_.ours[2]);
  EXPECT_EQ(g_short[4], both_.ours[3]);
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

// A module's unwind tables in miniature: .eh_frame_hdr with one entry, then a CIE (return
// address in r16 at CFA-8, CFA = rsp+8) and one FDE of 0x100 bytes with `instructions`. The code
// it describes is never run: its start is an address past the tables.
struct Tables {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(512, 0);
  uint64_t start = 0;

  void put32(std::size_t at, uint32_t v) { std::memcpy(&bytes[at], &v, 4); }
  Tables(const std::string& augmentation, const std::vector<uint8_t>& instructions) {
    const std::size_t cie = 32;
    std::size_t at = cie + 8;
    bytes[at++] = 1;  // version
    for (char c : augmentation) bytes[at++] = static_cast<uint8_t>(c);
    bytes[at++] = 0;
    bytes[at++] = 1;     // code alignment
    bytes[at++] = 0x78;  // data alignment -8
    bytes[at++] = 16;    // the return address register
    bytes[at++] = 1;     // augmentation data: the FDE pointer encoding
    bytes[at++] = 0x1b;  // pcrel sdata4
    for (uint8_t b : {0x0c, 0x07, 0x08, 0x90, 0x01}) bytes[at++] = b;  // def_cfa rsp+8; r16 at -8
    while ((at - cie) % 4 != 0) bytes[at++] = 0;
    put32(cie, static_cast<uint32_t>(at - cie - 4));
    const std::size_t fde = at;
    put32(fde + 4, static_cast<uint32_t>(fde + 4 - cie));
    const auto base = reinterpret_cast<uint64_t>(bytes.data());
    start = base + 0x1000;
    put32(fde + 8, static_cast<uint32_t>(start - (base + fde + 8)));
    put32(fde + 12, 0x100);
    at = fde + 16;
    bytes[at++] = 0;  // no augmentation data
    for (uint8_t b : instructions) bytes[at++] = b;
    while ((at - fde) % 4 != 0) bytes[at++] = 0;
    put32(fde, static_cast<uint32_t>(at - fde - 4));
    bytes[0] = 1;
    bytes[1] = 0x1b;  // eh_frame_ptr: pcrel sdata4
    bytes[2] = 0x03;  // fde count: udata4
    bytes[3] = 0x3b;  // the table: datarel sdata4
    put32(4, static_cast<uint32_t>(cie - 4));
    put32(8, 1);
    put32(12, static_cast<uint32_t>(start - base));
    put32(16, static_cast<uint32_t>(fde));
  }
  FrameRule at(uint64_t offset) const { return frame_rule_in(bytes.data(), start + offset); }
};

bool same(const FrameRule& a, const FrameRule& b) {
  return a.kind == b.kind && a.cfa_is_rbp == b.cfa_is_rbp && a.cfa_offset == b.cfa_offset &&
         a.rbp_offset == b.rbp_offset;
}

FrameRule step(bool cfa_is_rbp, int32_t cfa_offset, int16_t rbp_offset) {
  FrameRule rule;
  rule.kind = FrameRule::Kind::kStep;
  rule.cfa_is_rbp = cfa_is_rbp;
  rule.cfa_offset = cfa_offset;
  rule.rbp_offset = rbp_offset;
  return rule;
}

// push rbp (1 byte), mov rbp, rsp (3 bytes): the prologue of a function with a frame pointer.
const std::vector<uint8_t> kPrologue = {0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06};

TEST(FrameRules, FollowAPrologueInstructionByInstruction) {
  const Tables tables("zR", kPrologue);
  EXPECT_TRUE(same(tables.at(0), step(false, 8, 0)));
  EXPECT_TRUE(same(tables.at(1), step(false, 16, -16)));
  EXPECT_TRUE(same(tables.at(3), step(false, 16, -16)));
  EXPECT_TRUE(same(tables.at(4), step(true, 16, -16)));
  EXPECT_TRUE(same(tables.at(0xff), step(true, 16, -16)));
  EXPECT_EQ(tables.at(0x100).kind, FrameRule::Kind::kUnknown);  // past the FDE
}

TEST(FrameRules, LeaveSignalFramesAndRulesForRspToLibunwind) {
  EXPECT_EQ(Tables("zRS", kPrologue).at(4).kind, FrameRule::Kind::kUnknown);
  // 'S' after a letter this reader does not know.
  EXPECT_EQ(Tables("zRXS", kPrologue).at(4).kind, FrameRule::Kind::kUnknown);
  // rsp saved at CFA-24 from the second instruction on: the caller's rsp is not the CFA there.
  std::vector<uint8_t> rsp_rule = kPrologue;
  rsp_rule.insert(rsp_rule.begin() + 1, {0x87, 0x03});
  const Tables tables("zR", rsp_rule);
  EXPECT_TRUE(same(tables.at(0), step(false, 8, 0)));
  EXPECT_EQ(tables.at(1).kind, FrameRule::Kind::kUnknown);
  // Remembered and restored state, and DW_CFA_restore of rbp to the CIE's rule.
  const Tables restored("zR",
                        {0x41, 0x0e, 0x10, 0x86, 0x02, 0x0a, 0x41, 0x0e, 0x20, 0xc6, 0x41, 0x0b});
  EXPECT_TRUE(same(restored.at(1), step(false, 16, -16)));
  EXPECT_TRUE(same(restored.at(2), step(false, 32, 0)));
  EXPECT_TRUE(same(restored.at(3), step(false, 16, -16)));
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
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer runs a handler later, from its own code, not on a kernel signal frame.
  GTEST_SKIP() << "ThreadSanitizer defers signal handlers";
#endif
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
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer runs a handler later, from its own code, not on a kernel signal frame.
  GTEST_SKIP() << "ThreadSanitizer defers signal handlers";
#endif
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
