// SPDX-License-Identifier: Apache-2.0
#include "interpose/stacks/stack_walker.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "format/hot_path.h"
#include "interpose/common/instance_id.h"
#include "interpose/stacks/frame_rules.h"

#if defined(__x86_64__)
// The registers a walk starts from: the return address into the caller (walk()), the caller's
// stack pointer once this returns, and rbp, which this leaf leaves alone. With the hot path's
// functions (format/hot_path.h).
asm(R"(
  .pushsection .text.hot,"ax",@progbits
  .p2align 4
  .globl gmt_walk_start_registers
  .hidden gmt_walk_start_registers
  .type gmt_walk_start_registers, @function
gmt_walk_start_registers:
  .cfi_startproc
  movq (%rsp), %rax
  movq %rax, 0(%rdi)
  leaq 8(%rsp), %rax
  movq %rax, 8(%rdi)
  movq %rbp, 16(%rdi)
  ret
  .cfi_endproc
  .size gmt_walk_start_registers, .-gmt_walk_start_registers
  .popsection
)");
extern "C" void gmt_walk_start_registers(void* start);
#endif

namespace gmt::interpose {
namespace {

constexpr std::size_t kRuleSlots = 2048;
// Walks by their start, a few to a set: one place in a program's code often reaches the
// allocator at one stack pointer from several callers (a step's different layers), and their
// walks take turns.
constexpr std::size_t kWalkSets = 128;
constexpr std::size_t kWalkWays = 4;
// About 400 walks of a PyTorch stack (34 frames, 80 reads); pages untouched until used.
constexpr std::size_t kArenaReads = 32768;
// The address of the "read" of rbp as the walk found it in the register.
constexpr uint64_t kStartRbp = 2;

thread_local void* my_walks __attribute__((tls_model("initial-exec"))) = nullptr;

// A word of the thread's own stack, in a frame the sanitizers know nothing about.
__attribute__((no_sanitize("address", "thread", "undefined"))) uint64_t stack_word(uint64_t at) {
  return *reinterpret_cast<const volatile uint64_t*>(at);
}

uint64_t mix(uint64_t x) {
  x *= 0x9E3779B97F4A7C15ull;
  return x ^ (x >> 29);
}

}  // namespace

struct StackWalker::ThreadWalks {
  struct RuleSlot {
    uint64_t pc = 0;
    FrameRule rule;
  };
  struct WalkSlot {
    uint64_t pc = 0;
    uint64_t sp = 0;
    uint32_t shape = 0;
    uint32_t first = 0;  // its reads in the arena
    // Its reads in the arena: the return addresses, in the walk's order (frames 1...), then the
    // values of rbp that the walk used.
    uint16_t returns = 0;
    uint16_t others = 0;
    uint16_t frames = 0;
    // It met a frame it could not follow: a walk from here is left to libunwind at once.
    bool gave_up = false;
  };
  struct Read {
    uint64_t address;  // a stack address, or kStartRbp
    uint64_t value;
  };

  uint64_t owner = 0;
  uint64_t epoch = 0;  // the walker's epoch_ its rules and walks were learnt in
  uint64_t stack_low = 0;
  uint64_t stack_high = 0;  // 0: the thread's stack is not known, nothing is walked
  Counts counts;
  uint32_t used = 0;
  RuleSlot rules[kRuleSlots];
  WalkSlot walks[kWalkSets][kWalkWays];
  uint8_t next_way[kWalkSets] = {};  // the way a new walk of the set replaces
  Read arena[kArenaReads];

  void forget() {
    for (auto& r : rules) r = RuleSlot{};
    forget_walks();
  }
  void forget_walks() {
    for (auto& set : walks) {
      for (auto& w : set) w = WalkSlot{};
    }
    used = 0;
  }
  void find_stack() {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
    void* low = nullptr;
    std::size_t size = 0;
    if (pthread_attr_getstack(&attr, &low, &size) == 0) {
      stack_low = reinterpret_cast<uint64_t>(low);
      stack_high = stack_low + size;
    }
    pthread_attr_destroy(&attr);
  }
  // Writes the frames of `slot`'s walk if every word it read still holds what it held: a walk
  // from `start` would read the same words and find the same frames.
  bool remembered(const WalkSlot& slot, const Start& start, uint64_t* frames) const {
    const Read* reads = arena + slot.first;
    // Independent loads, whose addresses are known: the core has them all in flight at once.
    bool same = true;
    for (int i = 0; i < slot.returns; ++i) same &= stack_word(reads[i].address) == reads[i].value;
    for (int i = slot.returns; i < slot.returns + slot.others; ++i) {
      const uint64_t address = reads[i].address;
      same &= (address == kStartRbp ? start.rbp : stack_word(address)) == reads[i].value;
    }
    if (!same) return false;
    frames[0] = start.pc;
    for (int i = 1; i < slot.frames; ++i) frames[i] = reads[i - 1].value;
    return true;
  }
  FrameRule rule_at(uint64_t pc) {
    RuleSlot& slot = rules[mix(pc) % kRuleSlots];
    if (slot.pc != pc) {
      slot.rule = find_frame_rule(pc);
      slot.pc = pc;
    }
    return slot.rule;
  }
};

StackWalker::StackWalker() : id_(new_instance_id()) {
  have_walks_key_ = pthread_key_create(&walks_key_, &StackWalker::free_thread_walks) == 0;
}

StackWalker::~StackWalker() {
  if (have_walks_key_) pthread_key_delete(walks_key_);
}

void StackWalker::free_thread_walks(void* walks) {
  if (my_walks == walks) my_walks = nullptr;
  delete static_cast<ThreadWalks*>(walks);
}

GMT_HOT_PATH StackWalker::ThreadWalks* StackWalker::thread_walks() {
  auto* walks = static_cast<ThreadWalks*>(my_walks);
  const uint64_t epoch = epoch_.load(std::memory_order_relaxed);
  if (walks != nullptr && walks->owner == id_ && walks->epoch == epoch) [[likely]]
    return walks;
  return new_thread_walks(walks, epoch);
}

// The calling thread's walks made, given to this walker, or forgotten since a library went away.
__attribute__((noinline)) StackWalker::ThreadWalks* StackWalker::new_thread_walks(
    ThreadWalks* walks, uint64_t epoch) {
  if (walks != nullptr && walks->owner == id_) {
    walks->forget();
    walks->epoch = epoch;
    return walks;
  }
  if (!have_walks_key_) return nullptr;
  if (walks == nullptr) {
    // One per thread that takes native stacks, freed when it ends (a thread that meets a second
    // walker, in tests only, reuses it).
    walks = new (std::nothrow) ThreadWalks;
    if (walks == nullptr) return nullptr;
    walks->find_stack();
    my_walks = walks;
    pthread_setspecific(walks_key_, walks);
  } else {
    walks->forget();
    walks->counts = Counts{};
  }
  walks->owner = id_;
  walks->epoch = epoch;
  return walks;
}

StackWalker::Counts StackWalker::thread_counts() const {
  const auto* walks = static_cast<const ThreadWalks*>(my_walks);
  return walks != nullptr && walks->owner == id_ ? walks->counts : Counts{};
}

GMT_HOT_PATH __attribute__((noinline)) int StackWalker::walk(uint64_t* frames, int max,
                                                             const StopModules* stop) {
#if defined(__x86_64__)
  Start start{};
  gmt_walk_start_registers(&start);
  return walk_from(start, frames, max, stop);
#else
  (void)frames, (void)max, (void)stop;
  return -1;
#endif
}

GMT_HOT_PATH int StackWalker::walk_from(const Start& start, uint64_t* frames, int max,
                                        const StopModules* stop) {
  ThreadWalks* w = thread_walks();
  if (w == nullptr || max <= 0) [[unlikely]]
    return -1;
  if (start.sp < w->stack_low || start.sp >= w->stack_high) [[unlikely]] {
    ++w->counts.given_up;  // an unknown or foreign stack (sigaltstack, a coroutine's)
    return -1;
  }
  const auto shape = static_cast<uint32_t>(max) | (stop != nullptr ? 1u << 16 : 0u);
  const std::size_t set = mix(start.pc ^ mix(start.sp ^ shape)) % kWalkSets;

  // A walk from here before, if every word it read still holds what it held.
  for (const ThreadWalks::WalkSlot& slot : w->walks[set]) {
    if (slot.pc != start.pc || slot.sp != start.sp || slot.shape != shape || slot.frames == 0)
      continue;
    if (w->remembered(slot, start, frames)) {
      if (slot.gave_up) [[unlikely]] {
        ++w->counts.given_up;
        return -1;
      }
      ++w->counts.remembered;
      return slot.frames;
    }
  }
  return walk_anew(w, start, frames, max, stop, shape, set);
}

// Out of line: in a training loop nearly every walk is remembered, and this code would only
// spread the remembered path's over more lines of a cold instruction cache.
__attribute__((noinline)) int StackWalker::walk_anew(ThreadWalks* w, const Start& start,
                                                     uint64_t* frames, int max,
                                                     const StopModules* stop, uint32_t shape,
                                                     std::size_t set) {
  // At most one return address and one saved rbp a frame, and rbp from its register.
  const uint32_t most_reads = 2 * static_cast<uint32_t>(max) + 1;
  if (most_reads > kArenaReads) return -1;
  if (w->used + most_reads > kArenaReads) w->forget_walks();
  // Return addresses from the front of the room, the values of rbp used from its back.
  ThreadWalks::Read* reads = w->arena + w->used;
  uint32_t returns = 0, others = 0;

  uint64_t pc = start.pc, sp = start.sp, rbp = start.rbp;
  // Where rbp's value came from; recorded only once a frame's CFA uses it, since a saved rbp
  // that no rule uses is any value the program left in the register.
  uint64_t rbp_from = kStartRbp;
  bool rbp_read = false;
  int n = 0;
  bool gave_up = false;
  for (;;) {
    frames[n++] = pc;
    if (n == max) break;
    if (stop != nullptr && stop->contains(pc)) break;
    const FrameRule rule = w->rule_at(pc - 1);
    if (rule.kind == FrameRule::Kind::kOutermost) break;
    if (rule.kind != FrameRule::Kind::kStep) {
      gave_up = true;
      break;
    }
    if (rule.cfa_is_rbp && !rbp_read) {
      reads[most_reads - 1 - others++] = {rbp_from, rbp};
      rbp_read = true;
    }
    const uint64_t cfa = (rule.cfa_is_rbp ? rbp : sp) + static_cast<int64_t>(rule.cfa_offset);
    // A caller's frame lies above its callee's, inside the thread's stack: anything else ends
    // the walk (a frame without rules that says so, or the stack's end).
    if (cfa <= sp || cfa > w->stack_high || (cfa & 7) != 0) break;
    const uint64_t return_address = stack_word(cfa - 8);
    reads[returns++] = {cfa - 8, return_address};
    if (rule.rbp_offset != 0) {
      const uint64_t at = cfa + static_cast<int64_t>(rule.rbp_offset);
      if (at < sp || at + 8 > w->stack_high || (at & 7) != 0) break;
      rbp = stack_word(at);
      rbp_from = at;
      rbp_read = false;
    }
    sp = cfa;
    pc = return_address;
    if (pc == 0) break;
  }
  // The values of rbp, from the back of the room to right after the return addresses (the two
  // ranges may overlap).
  std::reverse(reads + most_reads - others, reads + most_reads);
  std::memmove(reads + returns, reads + most_reads - others, others * sizeof(ThreadWalks::Read));
  ThreadWalks::WalkSlot& slot = w->walks[set][w->next_way[set]];
  w->next_way[set] = static_cast<uint8_t>((w->next_way[set] + 1) % kWalkWays);
  slot = ThreadWalks::WalkSlot{start.pc,
                               start.sp,
                               shape,
                               w->used,
                               static_cast<uint16_t>(returns),
                               static_cast<uint16_t>(others),
                               static_cast<uint16_t>(n),
                               gave_up};
  w->used += returns + others;
  if (gave_up) {
    ++w->counts.given_up;
    return -1;
  }
  ++w->counts.walked;
  return n;
}

}  // namespace gmt::interpose
