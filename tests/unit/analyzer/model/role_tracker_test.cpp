// SPDX-License-Identifier: Apache-2.0
// Roles and modules (format 4.8's Scope and Tag records) through the replay: a training step's
// blocks in the roles their scopes, tags and lifetimes give them, at the peak and at exit, and
// adding up to the device's figure.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "analyzer/model/replay.h"
#include "tests/unit/trace_bytes.h"

namespace gmt::analyzer {
namespace {

using format::BlockAction;
constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kMain = 1;
constexpr uint64_t kAutograd = 2;
constexpr uint64_t kSegment = 0x7f0000000000;

format::BlockRecord block(uint64_t t, uint64_t thread, BlockAction action, uint64_t offset,
                          uint64_t size, uint32_t stack = 0) {
  format::BlockRecord r;
  r.time_ns = t;
  r.thread = thread;
  r.allocator = static_cast<uint32_t>(format::BlockAllocator::kPytorch);
  r.action = static_cast<uint32_t>(action);
  r.device = 0;
  r.address = kSegment + offset;
  r.size = size;
  r.stack = stack;
  return r;
}

format::ScopeRecord scope(uint64_t t, uint64_t thread, format::ScopeAction action,
                          format::ScopeKind kind, uint32_t name = 0) {
  format::ScopeRecord r;
  r.time_ns = t;
  r.thread = thread;
  r.action = static_cast<uint32_t>(action);
  r.kind = static_cast<uint32_t>(kind);
  r.name = name;
  return r;
}

format::TagRecord tag(uint64_t t, format::TagRole role, uint64_t offset, uint32_t name) {
  format::TagRecord r;
  r.time_ns = t;
  r.role = static_cast<uint32_t>(role);
  r.address = kSegment + offset;
  r.name = name;
  return r;
}

format::NameRecord name(uint32_t id, const char* text) {
  format::NameRecord r;
  r.id = id;
  r.text = text;
  return r;
}

using format::ScopeAction;
using format::ScopeKind;
using format::TagRole;

// One step of a one-layer model: a parameter, an input, fc1's forward keeps 16 MiB for backward
// and frees 2 MiB inside; backward (its blocks on the autograd thread) makes a gradient and frees
// 6 MiB of scratch; AdamW's step makes 16 MiB of state. 100 MiB segment.
std::vector<format::Record> training_step(bool with_hooks) {
  std::vector<format::Record> records = {name(1, "Net"),        name(2, "fc1"),
                                         name(3, "fc1.weight"), name(4, "fc1.weight.exp_avg"),
                                         name(5, "AdamW"),      name(6, "backward")};
  format::AllocRecord segment = test::alloc_at(1, 0, kSegment, 100 * kMiB);
  records.push_back(segment);
  records.push_back(block(2, kMain, BlockAction::kSegmentAlloc, 0, 100 * kMiB));
  records.push_back(block(10, kMain, BlockAction::kAlloc, 0, 8 * kMiB));         // parameter
  records.push_back(block(11, kMain, BlockAction::kAlloc, 8 * kMiB, 4 * kMiB));  // input
  records.push_back(scope(12, kMain, ScopeAction::kEnter, ScopeKind::kModule, 1));
  records.push_back(scope(13, kMain, ScopeAction::kEnter, ScopeKind::kModule, 2));
  records.push_back(block(14, kMain, BlockAction::kAlloc, 12 * kMiB, 16 * kMiB));  // activation
  records.push_back(block(15, kMain, BlockAction::kAlloc, 28 * kMiB, 2 * kMiB));   // temporary
  records.push_back(block(16, kMain, BlockAction::kFreeRequested, 28 * kMiB, 2 * kMiB));
  records.push_back(scope(17, kMain, ScopeAction::kExit, ScopeKind::kModule));
  records.push_back(scope(18, kMain, ScopeAction::kExit, ScopeKind::kModule));
  records.push_back(tag(19, TagRole::kParameter, 0, 3));
  records.push_back(scope(20, kMain, ScopeAction::kEnter, ScopeKind::kBackward, 6));
  records.push_back(block(21, kAutograd, BlockAction::kAlloc, 30 * kMiB, 8 * kMiB));  // gradient
  records.push_back(block(22, kAutograd, BlockAction::kAlloc, 38 * kMiB, 6 * kMiB));  // scratch
  records.push_back(block(23, kAutograd, BlockAction::kFreeRequested, 38 * kMiB, 6 * kMiB));
  records.push_back(block(24, kAutograd, BlockAction::kFreeRequested, 12 * kMiB, 16 * kMiB));
  records.push_back(scope(25, kMain, ScopeAction::kExit, ScopeKind::kBackward));
  records.push_back(scope(26, kMain, ScopeAction::kEnter, ScopeKind::kOptimizer, 5));
  records.push_back(tag(26, TagRole::kGradient, 30 * kMiB, 3));
  records.push_back(block(27, kMain, BlockAction::kAlloc, 44 * kMiB, 16 * kMiB));  // state
  records.push_back(tag(28, TagRole::kOptimizerState, 44 * kMiB, 4));
  records.push_back(scope(29, kMain, ScopeAction::kExit, ScopeKind::kOptimizer));
  records.push_back(block(30, kMain, BlockAction::kFreeRequested, 8 * kMiB, 4 * kMiB));
  if (!with_hooks) {
    std::erase_if(records, [](const format::Record& r) {
      return std::holds_alternative<format::ScopeRecord>(r) ||
             std::holds_alternative<format::TagRecord>(r);
    });
  }
  return records;
}

TraceSummary replayed(const std::vector<format::Record>& records) {
  Replay replay;
  for (const auto& r : records) replay.apply(r);
  replay.finish();
  return replay.summary();
}

TEST(Roles, ATrainingStepsBlocksTakeTheirRolesAtThePeak) {
  const TraceSummary s = replayed(training_step(true));
  EXPECT_TRUE(s.roles_recorded);
  EXPECT_EQ(s.role_tags_unmatched, 0u);
  const DeviceSummary& d = s.devices.at(0);
  ASSERT_TRUE(d.roles_at_peak.has_value());
  const RoleBreakdown& peak = *d.roles_at_peak;
  // The users held the most (8 + 4 + 16 + 8 + 6 = 42 MiB) when backward's scratch was made.
  EXPECT_EQ(peak[Role::kParameter].bytes, 8 * kMiB);
  EXPECT_EQ(peak[Role::kParameter].tagged_bytes, 8 * kMiB);
  EXPECT_EQ(peak[Role::kInput].bytes, 4 * kMiB);
  EXPECT_EQ(peak[Role::kActivation].bytes, 16 * kMiB);
  EXPECT_EQ(peak[Role::kActivation].tagged_bytes, 0u);
  // Tagged before the step, after the peak: the tag names the block for its whole life.
  EXPECT_EQ(peak[Role::kGradient].bytes, 8 * kMiB);
  EXPECT_EQ(peak[Role::kGradient].tagged_bytes, 8 * kMiB);
  EXPECT_EQ(peak[Role::kTemporary].bytes, 6 * kMiB);
  EXPECT_EQ(peak[Role::kOptimizerState].bytes, 0u);
  EXPECT_EQ(peak[Role::kAllocatorCache].bytes, 58 * kMiB);
  EXPECT_EQ(peak[Role::kUnknown].bytes, 0u);
  EXPECT_EQ(peak.total_bytes(), d.peak_bytes);
  // fc1 holds its weight, its gradient and what its forward kept.
  ASSERT_EQ(peak.modules.size(), 1u);
  EXPECT_EQ(peak.modules[0].module, "fc1");
  EXPECT_EQ(peak.modules[0].total, 32 * kMiB);
  EXPECT_EQ(peak.modules[0].bytes[static_cast<std::size_t>(Role::kActivation)], 16 * kMiB);
  EXPECT_EQ(peak.modules[0].bytes[static_cast<std::size_t>(Role::kParameter)], 8 * kMiB);
  EXPECT_EQ(peak.modules[0].bytes[static_cast<std::size_t>(Role::kGradient)], 8 * kMiB);
}

TEST(Roles, AtExitTheStepLeavesParametersGradientsAndState) {
  const TraceSummary s = replayed(training_step(true));
  const DeviceSummary& d = s.devices.at(0);
  ASSERT_TRUE(d.roles_at_exit.has_value());
  const RoleBreakdown& exit = *d.roles_at_exit;
  EXPECT_EQ(exit[Role::kParameter].bytes, 8 * kMiB);
  EXPECT_EQ(exit[Role::kGradient].bytes, 8 * kMiB);
  EXPECT_EQ(exit[Role::kOptimizerState].bytes, 16 * kMiB);
  EXPECT_EQ(exit[Role::kOptimizerState].tagged_bytes, 16 * kMiB);
  EXPECT_EQ(exit[Role::kActivation].bytes, 0u);
  EXPECT_EQ(exit[Role::kAllocatorCache].bytes, 68 * kMiB);
  EXPECT_EQ(exit.total_bytes(), d.live_bytes);
  ASSERT_EQ(exit.modules.size(), 1u);
  EXPECT_EQ(exit.modules[0].bytes[static_cast<std::size_t>(Role::kOptimizerState)], 16 * kMiB);
}

// Without the tags, the lifetimes alone still place the gradient and the optimizer's state
// (inferred); the parameter, made before any scope and live while forward ran, reads as input.
TEST(Roles, WithoutTagsScopesAndLifetimesInferTheRoles) {
  std::vector<format::Record> records = training_step(true);
  std::erase_if(records, [](const format::Record& r) {
    return std::holds_alternative<format::TagRecord>(r);
  });
  const TraceSummary s = replayed(records);
  const RoleBreakdown& peak = *s.devices.at(0).roles_at_peak;
  EXPECT_EQ(peak[Role::kGradient].bytes, 8 * kMiB);
  EXPECT_EQ(peak[Role::kGradient].tagged_bytes, 0u);
  EXPECT_EQ(peak[Role::kInput].bytes, 12 * kMiB);
  EXPECT_EQ(peak[Role::kParameter].bytes, 0u);
  const RoleBreakdown& exit = *s.devices.at(0).roles_at_exit;
  EXPECT_EQ(exit[Role::kOptimizerState].bytes, 16 * kMiB);
  EXPECT_EQ(exit[Role::kOptimizerState].tagged_bytes, 0u);
}

// A trace without the hooks' records says so, and calls every block unknown: never a guess.
TEST(Roles, WithoutScopesOrTagsEveryBlockIsUnknown) {
  const TraceSummary s = replayed(training_step(false));
  EXPECT_FALSE(s.roles_recorded);
  const RoleBreakdown& peak = *s.devices.at(0).roles_at_peak;
  EXPECT_EQ(peak[Role::kUnknown].bytes, 42 * kMiB);
  EXPECT_EQ(peak[Role::kAllocatorCache].bytes, 58 * kMiB);
  EXPECT_TRUE(peak.modules.empty());
}

// A tag for an address in no live block is counted, not applied to another block.
TEST(Roles, ATagOfNoLiveBlockIsCountedAsUnmatched) {
  std::vector<format::Record> records = training_step(true);
  records.push_back(tag(40, TagRole::kParameter, 90 * kMiB, 3));
  const TraceSummary s = replayed(records);
  EXPECT_EQ(s.role_tags_unmatched, 1u);
  EXPECT_EQ((*s.devices.at(0).roles_at_exit)[Role::kParameter].bytes, 8 * kMiB);
}

// Where the framework tags gradients, a block that backward made and kept without a tag is no
// gradient: unknown (24 MiB), or PyTorch's cuBLAS workspace of the autograd thread where it has
// the workspace's size (32 MiB) and is kept to the end.
TEST(Roles, WithGradientTagsAnUntaggedBlockKeptByBackwardIsUnknown) {
  std::vector<format::Record> records = training_step(true);
  const auto backward_end = std::find_if(records.begin(), records.end(), [](const auto& r) {
    const auto* s = std::get_if<format::ScopeRecord>(&r);
    return s != nullptr && s->kind == static_cast<uint32_t>(ScopeKind::kBackward) &&
           s->action == static_cast<uint32_t>(ScopeAction::kExit);
  });
  records.insert(backward_end, {block(24, kAutograd, BlockAction::kAlloc, 60 * kMiB, 32 * kMiB),
                                block(24, kAutograd, BlockAction::kAlloc, 92 * kMiB, 8 * kMiB)});
  const TraceSummary s = replayed(records);
  const RoleBreakdown& exit = *s.devices.at(0).roles_at_exit;
  EXPECT_EQ(exit[Role::kGradient].bytes, 8 * kMiB);
  EXPECT_EQ(exit[Role::kLibrary].bytes, 32 * kMiB);
  EXPECT_EQ(exit[Role::kUnknown].bytes, 8 * kMiB);
}

// PyTorch's cuBLAS workspace (32 MiB on Hopper, 8.125 MiB before) and cuBLASLt's (the thread's
// first 1 MiB block kept after it), made in a forward and kept to the program's end, are the
// library's; a block of that size freed before the end is not, nor a second 1 MiB block, nor a
// 1 MiB block on a thread that made no cuBLAS workspace.
TEST(Roles, CublasWorkspacesKeptToTheEndAreTheLibrarys) {
  const auto step = [](uint64_t workspace, bool freed_before_end) {
    std::vector<format::Record> records = {name(1, "Net"), name(2, "fc1")};
    records.push_back(test::alloc_at(1, 0, kSegment, 100 * kMiB));
    records.push_back(block(2, kMain, BlockAction::kSegmentAlloc, 0, 100 * kMiB));
    records.push_back(scope(3, kMain, ScopeAction::kEnter, ScopeKind::kModule, 1));
    records.push_back(scope(4, kMain, ScopeAction::kEnter, ScopeKind::kModule, 2));
    records.push_back(block(5, kMain, BlockAction::kAlloc, 50 * kMiB, kMiB));  // temporary
    records.push_back(block(5, kMain, BlockAction::kAlloc, 0, workspace));
    records.push_back(block(5, kMain, BlockAction::kAlloc, 51 * kMiB, kMiB));  // temporary
    records.push_back(block(5, kMain, BlockAction::kFreeRequested, 51 * kMiB, 0));
    records.push_back(block(5, kMain, BlockAction::kFreeRequested, 50 * kMiB, 0));
    records.push_back(block(6, kMain, BlockAction::kAlloc, 40 * kMiB, kMiB));      // cuBLASLt's
    records.push_back(block(7, kMain, BlockAction::kAlloc, 42 * kMiB, 4 * kMiB));  // kept output
    records.push_back(block(8, kMain, BlockAction::kAlloc, 47 * kMiB, kMiB));      // kept 1 MiB
    records.push_back(scope(9, kMain, ScopeAction::kExit, ScopeKind::kModule));
    records.push_back(scope(10, kMain, ScopeAction::kExit, ScopeKind::kModule));
    if (freed_before_end) records.push_back(block(11, kMain, BlockAction::kFreeRequested, 0, 0));
    records.push_back(scope(12, kMain, ScopeAction::kEnter, ScopeKind::kProgramEnd, 1));
    // The teardown frees the workspaces: they were kept to the end.
    records.push_back(block(13, kMain, BlockAction::kFreeRequested, 40 * kMiB, 0));
    return replayed(records);
  };
  for (const uint64_t workspace : {32 * kMiB, 8 * kMiB + 128 * 1024}) {
    const TraceSummary kept = step(workspace, false);
    const RoleBreakdown& at_exit = *kept.devices.at(0).roles_at_exit;
    EXPECT_EQ(at_exit[Role::kLibrary].bytes, workspace + kMiB) << workspace;
    EXPECT_EQ(at_exit[Role::kLibrary].count, 2u);
    EXPECT_EQ(at_exit[Role::kUnknown].bytes, 5 * kMiB);
    EXPECT_EQ(kept.devices.at(0).roles_at_peak->operator[](Role::kLibrary).bytes, workspace + kMiB);
  }
  const TraceSummary freed = step(32 * kMiB, true);
  const RoleBreakdown& at_exit = *freed.devices.at(0).roles_at_exit;
  EXPECT_EQ(at_exit[Role::kLibrary].bytes, kMiB);  // cuBLASLt's, still kept
  // At the peak, in the forward still running, what no life places is the forward's work.
  EXPECT_EQ(freed.devices.at(0).roles_at_peak->operator[](Role::kActivation).bytes, 37 * kMiB);
  // Another size is no workspace, nor the 1 MiB after it.
  const TraceSummary other = step(16 * kMiB, false);
  EXPECT_EQ(other.devices.at(0).roles_at_exit->operator[](Role::kLibrary).bytes, 0u);
  EXPECT_EQ(other.devices.at(0).roles_at_exit->operator[](Role::kUnknown).bytes, 22 * kMiB);
}

// A trace that ends while work runs (the program died in it): what the running work made is
// placed by that work. Cut inside fc1's forward, its 16 MiB is an activation (autograd records),
// or a temporary when the forward is under no_grad; cut in backward after its gradient was made,
// the forward's 16 MiB not yet released is an activation, kept for that backward.
std::vector<format::Record> cut_before(std::vector<format::Record> records, uint64_t time_ns) {
  std::erase_if(records, [&](const format::Record& r) {
    return std::visit(
        [&](const auto& x) {
          if constexpr (requires { x.time_ns; }) return x.time_ns >= time_ns;
          return false;
        },
        r);
  });
  return records;
}

TEST(Roles, WorkRunningAtTheEndPlacesWhatItMade) {
  const TraceSummary in_forward = replayed(cut_before(training_step(true), 15));
  const RoleBreakdown& forward = *in_forward.devices.at(0).roles_at_exit;
  EXPECT_EQ(forward[Role::kActivation].bytes, 16 * kMiB);
  EXPECT_EQ(forward[Role::kActivation].running_bytes, 16 * kMiB);
  // The parameter, tagged only at 19, was made before the forward and lived through it.
  EXPECT_EQ(forward[Role::kInput].bytes, 12 * kMiB);
  EXPECT_EQ(forward[Role::kInput].running_bytes, 0u);
  EXPECT_EQ(forward[Role::kUnknown].bytes, 0u);
  ASSERT_EQ(forward.modules.size(), 1u);
  EXPECT_EQ(forward.modules[0].module, "fc1");
  EXPECT_EQ(forward.modules[0].bytes[static_cast<std::size_t>(Role::kActivation)], 16 * kMiB);

  std::vector<format::Record> no_grad = cut_before(training_step(true), 15);
  no_grad.insert(no_grad.end() - 2, scope(12, kMain, ScopeAction::kEnter, ScopeKind::kNoGrad));
  const TraceSummary under_no_grad = replayed(no_grad);
  const RoleBreakdown& inference = *under_no_grad.devices.at(0).roles_at_exit;
  EXPECT_EQ(inference[Role::kActivation].bytes, 0u);
  EXPECT_EQ(inference[Role::kTemporary].bytes, 16 * kMiB);
  EXPECT_EQ(inference[Role::kTemporary].running_bytes, 16 * kMiB);

  const TraceSummary in_backward = replayed(cut_before(training_step(true), 22));
  const RoleBreakdown& backward = *in_backward.devices.at(0).roles_at_exit;
  EXPECT_EQ(backward[Role::kActivation].bytes, 16 * kMiB);
  EXPECT_EQ(backward[Role::kActivation].running_bytes, 16 * kMiB);
  EXPECT_EQ(backward[Role::kGradient].bytes, 8 * kMiB);
  EXPECT_EQ(backward[Role::kParameter].bytes, 8 * kMiB);
  EXPECT_EQ(backward[Role::kUnknown].bytes, 0u);
}

// The same step, ended normally: what backward released is an activation by its life, and
// nothing is placed by running work (the peak falls in backward, after the forward ended).
TEST(Roles, WorkThatEndedPlacesNothingByRunning) {
  const TraceSummary s = replayed(training_step(true));
  for (const RoleFigure& f : s.devices.at(0).roles_at_peak->roles) EXPECT_EQ(f.running_bytes, 0u);
}

// "At exit" is the program's end when the framework marked it: what the teardown frees after it
// still counts.
TEST(Roles, AtExitIsTheProgramsEndWhenMarked) {
  std::vector<format::Record> records = training_step(true);
  records.push_back(scope(50, kMain, ScopeAction::kEnter, ScopeKind::kProgramEnd, 6));
  records.push_back(block(51, kMain, BlockAction::kFreeRequested, 44 * kMiB, 16 * kMiB));
  const TraceSummary s = replayed(records);
  const RoleBreakdown& exit = *s.devices.at(0).roles_at_exit;
  EXPECT_TRUE(exit.at_program_end);
  EXPECT_EQ(exit.time_ns, 50u);
  EXPECT_EQ(exit[Role::kOptimizerState].bytes, 16 * kMiB);
  EXPECT_EQ(exit.total_bytes(), 100 * kMiB);
}

// A forward reported in outline (its inner modules not reported, for their cost) gets its
// blocks' modules from the root's last forward reported whole: the same stack, in the same order.
TEST(Roles, AnOutlineForwardTakesItsModulesFromTheLastWholeOne) {
  std::vector<format::Record> records = {name(1, "Net"), name(2, "fc1"), name(3, "fc2"),
                                         test::alloc_at(1, 0, kSegment, 100 * kMiB)};
  records.push_back(block(2, kMain, BlockAction::kSegmentAlloc, 0, 100 * kMiB));
  // Forward 1, whole: fc1 and fc2 each make a block at the same stack (7), then one at 8.
  records.push_back(scope(10, kMain, ScopeAction::kEnter, ScopeKind::kModule, 1));
  records.push_back(scope(11, kMain, ScopeAction::kEnter, ScopeKind::kModule, 2));
  records.push_back(block(12, kMain, BlockAction::kAlloc, 0, 8 * kMiB, 7));
  records.push_back(scope(13, kMain, ScopeAction::kExit, ScopeKind::kModule));
  records.push_back(scope(14, kMain, ScopeAction::kEnter, ScopeKind::kModule, 3));
  records.push_back(block(15, kMain, BlockAction::kAlloc, 8 * kMiB, 4 * kMiB, 7));
  records.push_back(block(16, kMain, BlockAction::kAlloc, 12 * kMiB, 2 * kMiB, 8));
  records.push_back(scope(17, kMain, ScopeAction::kExit, ScopeKind::kModule));
  records.push_back(scope(18, kMain, ScopeAction::kExit, ScopeKind::kModule));
  records.push_back(scope(19, kMain, ScopeAction::kEnter, ScopeKind::kBackward, 0));
  for (uint64_t offset : {uint64_t{0}, 8 * kMiB, 12 * kMiB})
    records.push_back(block(20, kMain, BlockAction::kFreeRequested, offset, 0));
  records.push_back(scope(21, kMain, ScopeAction::kExit, ScopeKind::kBackward));
  // Forward 2, in outline: the same blocks in the same order, and one more at stack 7 that the
  // whole forward never made (the root's).
  records.push_back(scope(30, kMain, ScopeAction::kEnterOutline, ScopeKind::kModule, 1));
  records.push_back(block(31, kMain, BlockAction::kAlloc, 20 * kMiB, 8 * kMiB, 7));
  records.push_back(block(32, kMain, BlockAction::kAlloc, 28 * kMiB, 4 * kMiB, 7));
  records.push_back(block(33, kMain, BlockAction::kAlloc, 32 * kMiB, 2 * kMiB, 8));
  records.push_back(block(34, kMain, BlockAction::kAlloc, 34 * kMiB, 1 * kMiB, 7));
  records.push_back(scope(35, kMain, ScopeAction::kExit, ScopeKind::kModule));
  records.push_back(scope(36, kMain, ScopeAction::kEnter, ScopeKind::kBackward, 0));
  const TraceSummary s = replayed(records);
  const RoleBreakdown& peak = *s.devices.at(0).roles_at_peak;
  std::map<std::string, uint64_t> modules;
  for (const ModuleRoles& m : peak.modules) modules[m.module] = m.total;
  EXPECT_EQ(modules, (std::map<std::string, uint64_t>{
                         {"fc1", 8 * kMiB}, {"fc2", 6 * kMiB}, {"Net", 1 * kMiB}}));
}

// A CUDA graph's capture: what it makes is the graph's private pool's, whatever forward made it
// inside the capture, until freed; a tag still names a tensor's role; blocks made after the
// capture, on another thread during it, or before it, are not the graph's.
TEST(Roles, BlocksMadeInACudaGraphCaptureAreTheGraphs) {
  std::vector<format::Record> records = {name(1, "Net"), name(2, "cuda graph capture"),
                                         name(3, "w")};
  records.push_back(test::alloc_at(1, 0, kSegment, 100 * kMiB));
  records.push_back(block(2, kMain, BlockAction::kSegmentAlloc, 0, 100 * kMiB));
  records.push_back(block(3, kMain, BlockAction::kAlloc, 0, 2 * kMiB));  // before: a parameter
  records.push_back(tag(4, TagRole::kParameter, 0, 3));
  records.push_back(scope(5, kMain, ScopeAction::kEnter, ScopeKind::kCudaGraph, 2));
  records.push_back(scope(6, kMain, ScopeAction::kEnter, ScopeKind::kModule, 1));
  records.push_back(block(7, kMain, BlockAction::kAlloc, 2 * kMiB, 8 * kMiB));   // kept output
  records.push_back(block(8, kMain, BlockAction::kAlloc, 10 * kMiB, 4 * kMiB));  // scratch
  records.push_back(block(9, kMain, BlockAction::kFreeRequested, 10 * kMiB, 4 * kMiB));
  records.push_back(block(10, kAutograd, BlockAction::kAlloc, 14 * kMiB, 1 * kMiB));
  records.push_back(block(11, kMain, BlockAction::kAlloc, 15 * kMiB, 16 * kMiB));  // tagged
  records.push_back(tag(12, TagRole::kParameter, 15 * kMiB, 3));
  records.push_back(scope(13, kMain, ScopeAction::kExit, ScopeKind::kModule));
  records.push_back(scope(14, kMain, ScopeAction::kExit, ScopeKind::kCudaGraph));
  records.push_back(block(15, kMain, BlockAction::kAlloc, 31 * kMiB, 4 * kMiB));  // after
  records.push_back(block(16, kMain, BlockAction::kFreeRequested, 31 * kMiB, 4 * kMiB));
  const TraceSummary s = replayed(records);
  const DeviceSummary& d = s.devices.at(0);
  const RoleBreakdown& exit = *d.roles_at_exit;
  EXPECT_EQ(exit[Role::kCudaGraph].bytes, 8 * kMiB);
  EXPECT_EQ(exit[Role::kCudaGraph].count, 1u);
  EXPECT_EQ(exit[Role::kParameter].bytes, 18 * kMiB);
  EXPECT_EQ(exit[Role::kUnknown].bytes, 1 * kMiB);  // the other thread's: not the capture's
  EXPECT_EQ(exit.total_bytes(), 100 * kMiB);
  EXPECT_NE(std::string(role_basis(Role::kCudaGraph, false)).find("torch.cuda.graph"),
            std::string::npos);
}

// A program whose memory grows at every step (a new segment, a block kept from it): each step
// is a new peak, and copying the live blocks at each would cost the square of the steps. The
// first pass stops copying and says a second must take the last peak; the second, given the
// plan, takes it once, and its rows and roles hold every block.
// A whole training step captured (forward, backward, as PyTorch's whole-network capture): what the
// autograd engine's thread takes for a backward begun inside the capture is on the capture's
// stream, so in the graph's private pool; a backward after the capture is not.
TEST(Roles, BlocksTheAutogradThreadMakesForACapturedBackwardAreTheGraphs) {
  std::vector<format::Record> records = {name(1, "Net"), name(2, "cuda graph capture"),
                                         name(6, "backward")};
  records.push_back(test::alloc_at(1, 0, kSegment, 100 * kMiB));
  records.push_back(block(2, kMain, BlockAction::kSegmentAlloc, 0, 100 * kMiB));
  records.push_back(scope(3, kMain, ScopeAction::kEnter, ScopeKind::kCudaGraph, 2));
  records.push_back(scope(4, kMain, ScopeAction::kEnter, ScopeKind::kModule, 1));
  records.push_back(block(5, kMain, BlockAction::kAlloc, 0, 8 * kMiB));  // static output
  records.push_back(scope(6, kMain, ScopeAction::kExit, ScopeKind::kModule));
  records.push_back(scope(7, kMain, ScopeAction::kEnter, ScopeKind::kBackward, 6));
  records.push_back(block(8, kAutograd, BlockAction::kAlloc, 8 * kMiB, 4 * kMiB));  // static grad
  records.push_back(scope(9, kMain, ScopeAction::kExit, ScopeKind::kBackward));
  records.push_back(scope(10, kMain, ScopeAction::kExit, ScopeKind::kCudaGraph));
  records.push_back(scope(11, kMain, ScopeAction::kEnter, ScopeKind::kBackward, 6));
  records.push_back(block(12, kAutograd, BlockAction::kAlloc, 12 * kMiB, 2 * kMiB));  // eager
  records.push_back(scope(13, kMain, ScopeAction::kExit, ScopeKind::kBackward));
  const TraceSummary s = replayed(records);
  const RoleBreakdown& exit = *s.devices.at(0).roles_at_exit;
  EXPECT_EQ(exit[Role::kCudaGraph].bytes, 12 * kMiB);
  EXPECT_EQ(exit[Role::kCudaGraph].count, 2u);
  EXPECT_EQ(exit[Role::kGradient].bytes, 2 * kMiB);
  EXPECT_EQ(exit[Role::kUnknown].bytes, 0u);
  EXPECT_EQ(exit.total_bytes(), 100 * kMiB);
}

TEST(Roles, APeakThatKeepsGrowingIsTakenByASecondPass) {
  constexpr uint64_t kSteps = 3000;
  constexpr uint64_t kBlock = 1024 * 1024;
  std::vector<format::Record> records = {name(1, "w")};
  for (uint64_t i = 0; i < kSteps; ++i) {
    const uint64_t t = 10 + 3 * i;
    format::AllocRecord segment = test::alloc_at(t, 0, kSegment + i * kBlock, kBlock);
    records.push_back(segment);
    records.push_back(block(t + 1, kMain, BlockAction::kSegmentAlloc, i * kBlock, kBlock));
    records.push_back(block(t + 2, kMain, BlockAction::kAlloc, i * kBlock, kBlock));
  }
  records.push_back(tag(10 + 3 * kSteps, TagRole::kParameter, 0, 1));
  Replay first;
  for (const auto& r : records) first.apply(r);
  first.finish();
  ASSERT_TRUE(first.peak_pass_needed());
  EXPECT_TRUE(first.summary().devices.at(0).peak_block_sites.empty());
  EXPECT_FALSE(first.summary().devices.at(0).roles_at_peak.has_value());

  Replay second;
  second.plan_peak_snapshots(first.peak_snapshot_plan());
  for (const auto& r : records) second.apply(r);
  second.finish();
  EXPECT_FALSE(second.peak_pass_needed());
  const DeviceSummary& d = second.summary().devices.at(0);
  EXPECT_EQ(d.peak_bytes, kSteps * kBlock);
  uint64_t rows = 0;
  for (const PeakSite& site : d.peak_block_sites) rows += site.bytes;
  EXPECT_EQ(rows, kSteps * kBlock);
  ASSERT_TRUE(d.roles_at_peak.has_value());
  EXPECT_EQ((*d.roles_at_peak)[Role::kParameter].bytes, kBlock);
  EXPECT_EQ((*d.roles_at_peak)[Role::kUnknown].bytes, (kSteps - 1) * kBlock);
  EXPECT_EQ(d.roles_at_peak->total_bytes(), d.peak_bytes);
}

// Activation checkpointing: fc1's forward keeps only its output (2 MiB) and drops its 16 MiB
// intermediate; backward recomputes it on the autograd thread, where fc1's forward is a root of
// its own. The recomputed block is fc1's activation; the loss, made outside any module and freed
// after backward, stays a temporary (the recomputation is no new step's forward), and the input
// made before the step's forward stays the only input.
TEST(Roles, AForwardRecomputedInBackwardIsActivationsAndStartsNoStep) {
  std::vector<format::Record> records = {name(1, "Net"), name(2, "fc1"), name(3, "fc1.weight"),
                                         name(6, "backward")};
  records.push_back(test::alloc_at(1, 0, kSegment, 100 * kMiB));
  records.push_back(block(2, kMain, BlockAction::kSegmentAlloc, 0, 100 * kMiB));
  records.push_back(block(10, kMain, BlockAction::kAlloc, 0, 8 * kMiB));         // parameter
  records.push_back(block(11, kMain, BlockAction::kAlloc, 8 * kMiB, 4 * kMiB));  // input
  records.push_back(scope(12, kMain, ScopeAction::kEnter, ScopeKind::kModule, 1));
  records.push_back(scope(13, kMain, ScopeAction::kEnter, ScopeKind::kModule, 2));
  records.push_back(block(14, kMain, BlockAction::kAlloc, 12 * kMiB, 16 * kMiB));  // dropped
  records.push_back(block(15, kMain, BlockAction::kFreeRequested, 12 * kMiB, 16 * kMiB));
  records.push_back(block(16, kMain, BlockAction::kAlloc, 28 * kMiB, 2 * kMiB));  // output
  records.push_back(scope(17, kMain, ScopeAction::kExit, ScopeKind::kModule));
  records.push_back(scope(18, kMain, ScopeAction::kExit, ScopeKind::kModule));
  records.push_back(tag(19, TagRole::kParameter, 0, 3));
  records.push_back(block(20, kMain, BlockAction::kAlloc, 30 * kMiB, 1 * kMiB));  // loss
  records.push_back(scope(21, kMain, ScopeAction::kEnter, ScopeKind::kBackward, 6));
  records.push_back(scope(22, kAutograd, ScopeAction::kEnter, ScopeKind::kModule, 2));
  records.push_back(block(23, kAutograd, BlockAction::kAlloc, 31 * kMiB, 16 * kMiB));
  records.push_back(scope(24, kAutograd, ScopeAction::kExit, ScopeKind::kModule));
  records.push_back(block(25, kAutograd, BlockAction::kAlloc, 47 * kMiB, 8 * kMiB));  // gradient
  records.push_back(block(26, kAutograd, BlockAction::kFreeRequested, 31 * kMiB, 16 * kMiB));
  records.push_back(block(27, kAutograd, BlockAction::kFreeRequested, 28 * kMiB, 2 * kMiB));
  records.push_back(scope(28, kMain, ScopeAction::kExit, ScopeKind::kBackward));
  records.push_back(block(29, kMain, BlockAction::kFreeRequested, 30 * kMiB, 1 * kMiB));
  const TraceSummary s = replayed(records);
  const DeviceSummary& d = s.devices.at(0);
  ASSERT_TRUE(d.roles_at_peak.has_value());
  const RoleBreakdown& peak = *d.roles_at_peak;
  // The most was held (8 + 4 + 2 + 1 + 16 + 8 = 39 MiB) when backward made the gradient.
  EXPECT_EQ(peak.total_bytes(), d.peak_bytes);
  EXPECT_EQ(peak[Role::kParameter].bytes, 8 * kMiB);
  EXPECT_EQ(peak[Role::kInput].bytes, 4 * kMiB);
  EXPECT_EQ(peak[Role::kActivation].bytes, 18 * kMiB);
  EXPECT_EQ(peak[Role::kTemporary].bytes, 1 * kMiB);
  EXPECT_EQ(peak[Role::kGradient].bytes, 8 * kMiB);
  EXPECT_EQ(peak[Role::kUnknown].bytes, 0u);
  ASSERT_EQ(peak.modules.size(), 1u);
  EXPECT_EQ(peak.modules[0].module, "fc1");
  EXPECT_EQ(peak.modules[0].bytes[static_cast<std::size_t>(Role::kActivation)], 18 * kMiB);
  EXPECT_EQ(peak.modules[0].bytes[static_cast<std::size_t>(Role::kParameter)], 8 * kMiB);
}

TEST(Roles, NamesRoundTrip) {
  for (std::size_t i = 0; i < kRoleCount; ++i) {
    const Role role = static_cast<Role>(i);
    EXPECT_EQ(role_of_name(role_name(role)), role) << role_name(role);
  }
  EXPECT_EQ(role_of_name("weights"), std::nullopt);
}

// A decode loop under no_grad: each forward of the decoder makes, in its attention module, the
// layer's state (kept as an attribute: the next forward replaces it), its key-value cache's keys
// (tagged), logits it returns, and frees scratch inside. The second forward begins while the
// first's state, keys and logits live. 100 MiB segment.
std::vector<format::Record> decode_steps(int forwards) {
  std::vector<format::Record> records = {
      name(1, "Decoder"),
      name(2, "attn"),
      name(3, "attn.keys"),
      name(4, "attn.weight"),
      name(5, "batch=2 tokens=7 capacity=0 bytes_per_token=4096"),
      test::alloc_at(1, 0, kSegment, 100 * kMiB)};
  records.push_back(block(2, kMain, BlockAction::kSegmentAlloc, 0, 100 * kMiB));
  records.push_back(block(3, kMain, BlockAction::kAlloc, 0, 8 * kMiB));  // the weight
  records.push_back(tag(4, TagRole::kParameter, 0, 4));
  records.push_back(block(5, kMain, BlockAction::kAlloc, 8 * kMiB, 1 * kMiB));  // the prompt
  uint64_t t = 10;
  for (int i = 0; i < forwards; ++i, t += 20) {
    const uint64_t base = 16 * kMiB + static_cast<uint64_t>(i) * 16 * kMiB;
    records.push_back(scope(t, kMain, ScopeAction::kEnter, ScopeKind::kModule, 1));
    records.push_back(scope(t + 1, kMain, ScopeAction::kEnter, ScopeKind::kNoGrad));
    records.push_back(scope(t + 2, kMain, ScopeAction::kEnter, ScopeKind::kModule, 2));
    records.push_back(block(t + 3, kMain, BlockAction::kAlloc, base, 4 * kMiB));  // state
    if (i > 0) {  // the new state replaces the last forward's, as a cache grown by cat does
      records.push_back(block(t + 3, kMain, BlockAction::kFreeRequested, base - 16 * kMiB, 0));
    }
    records.push_back(block(t + 4, kMain, BlockAction::kAlloc, base + 4 * kMiB, 2 * kMiB));
    records.push_back(block(t + 5, kMain, BlockAction::kAlloc, base + 6 * kMiB, 1 * kMiB));
    records.push_back(block(t + 6, kMain, BlockAction::kAlloc, base + 7 * kMiB, 3 * kMiB));
    records.push_back(block(t + 7, kMain, BlockAction::kFreeRequested, base + 7 * kMiB, 0));
    records.push_back(scope(t + 8, kMain, ScopeAction::kExit, ScopeKind::kModule));
    records.push_back(scope(t + 9, kMain, ScopeAction::kExit, ScopeKind::kNoGrad));
    records.push_back(scope(t + 10, kMain, ScopeAction::kExit, ScopeKind::kModule));
    records.push_back(tag(t + 11, TagRole::kOutput, base + 6 * kMiB, 0));
    records.push_back(tag(t + 11, TagRole::kKvCache, base + 4 * kMiB, 3));
    records.push_back(scope(t + 12, kMain, ScopeAction::kEnter, ScopeKind::kKvCacheLength, 5));
  }
  return records;
}

TEST(Roles, WhatADecoderKeepsAcrossForwardsIsItsCacheStateAndOutputs) {
  const TraceSummary two = replayed(decode_steps(2));
  const RoleBreakdown& exit = *two.devices.at(0).roles_at_exit;
  EXPECT_EQ(exit[Role::kParameter].bytes, 8 * kMiB);
  EXPECT_EQ(exit[Role::kInput].bytes, 1 * kMiB);
  EXPECT_EQ(exit[Role::kKvCache].bytes, 4 * kMiB);
  EXPECT_EQ(exit[Role::kKvCache].tagged_bytes, 4 * kMiB);
  EXPECT_EQ(exit[Role::kOutput].bytes, 2 * kMiB);
  // The first forward's state was kept into the second, which replaced it: the second's, made
  // at the same place, is state too.
  EXPECT_EQ(exit[Role::kState].bytes, 4 * kMiB);
  EXPECT_EQ(exit[Role::kUnknown].bytes, 0u);
  EXPECT_EQ(exit[Role::kTemporary].bytes, 0u);
  EXPECT_EQ(two.role_tags_unmatched, 0u);
  ASSERT_EQ(exit.modules.size(), 1u);
  EXPECT_EQ(exit.modules[0].module, "attn");
  EXPECT_EQ(exit.modules[0].bytes[static_cast<std::size_t>(Role::kKvCache)], 4 * kMiB);
  EXPECT_EQ(exit.modules[0].bytes[static_cast<std::size_t>(Role::kState)], 4 * kMiB);
  EXPECT_EQ(exit.modules[0].bytes[static_cast<std::size_t>(Role::kOutput)], 2 * kMiB);
  ASSERT_TRUE(exit.kv_cache.has_value());
  EXPECT_EQ(exit.kv_cache->batch, 2u);
  EXPECT_EQ(exit.kv_cache->tokens, 7u);
  EXPECT_EQ(exit.kv_cache->capacity, 0u);
  EXPECT_EQ(exit.kv_cache->bytes_per_token, 4096u);

  // One forward: nothing has been kept into a later one yet (a workspace made once and kept is no
  // state either), and the temporary is the scratch freed inside (released before the end).
  const TraceSummary one = replayed(decode_steps(1));
  const RoleBreakdown& first = *one.devices.at(0).roles_at_exit;
  EXPECT_EQ(first[Role::kState].bytes, 0u);
  EXPECT_EQ(first[Role::kUnknown].bytes, 4 * kMiB);
  EXPECT_EQ(first[Role::kKvCache].bytes, 2 * kMiB);
  EXPECT_EQ(first[Role::kOutput].bytes, 1 * kMiB);
}

TEST(Roles, AKvCacheLengthParsesOnlyWhenWhole) {
  const auto length =
      parse_kv_cache_length("batch=8 tokens=1536 capacity=2048 bytes_per_token=32768");
  ASSERT_TRUE(length.has_value());
  EXPECT_EQ(length->batch, 8u);
  EXPECT_EQ(length->tokens, 1536u);
  EXPECT_EQ(length->capacity, 2048u);
  EXPECT_EQ(length->bytes_per_token, 32768u);
  EXPECT_FALSE(parse_kv_cache_length("batch=8 tokens=1536 capacity=0").has_value());
  EXPECT_FALSE(parse_kv_cache_length("batch=8 tokens=x capacity=0 bytes_per_token=1").has_value());
  EXPECT_FALSE(parse_kv_cache_length("").has_value());
}

// A cache's growth is one decode loop from its first report on; a report of fewer tokens (a new
// generate()) or another batch begins another.
TEST(Roles, ACacheGrowsFromItsFirstReportUntilANewLoopBegins) {
  const auto growing_since = [](const std::vector<std::string>& reports) {
    std::vector<format::Record> records = {test::alloc_at(1, 0, kSegment, 100 * kMiB)};
    records.push_back(block(2, kMain, BlockAction::kSegmentAlloc, 0, 100 * kMiB));
    uint64_t t = 10;
    for (std::size_t i = 0; i < reports.size(); ++i, t += 10) {
      records.push_back(name(static_cast<uint32_t>(i + 1), reports[i].c_str()));
      records.push_back(scope(t, kMain, ScopeAction::kEnter, ScopeKind::kKvCacheLength,
                              static_cast<uint32_t>(i + 1)));
    }
    const TraceSummary summary = replayed(records);
    return summary.devices.at(0).roles_at_exit->kv_cache->growing_since_ns;
  };
  const std::string b2t7 = "batch=2 tokens=7 capacity=0 bytes_per_token=4096";
  const std::string b2t8 = "batch=2 tokens=8 capacity=0 bytes_per_token=4096";
  const std::string b2t3 = "batch=2 tokens=3 capacity=0 bytes_per_token=4096";
  const std::string b4t9 = "batch=4 tokens=9 capacity=0 bytes_per_token=4096";
  EXPECT_EQ(growing_since({b2t7, b2t8, b2t8}), 10u);
  EXPECT_EQ(growing_since({b2t7, b2t8, b2t3}), 30u);
  EXPECT_EQ(growing_since({b2t7, b2t8, b4t9}), 30u);
  EXPECT_EQ(growing_since({b2t7, b2t3, b2t8}), 20u);
}

}  // namespace
}  // namespace gmt::analyzer
