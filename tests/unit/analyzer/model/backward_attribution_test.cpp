// SPDX-License-Identifier: Apache-2.0
// Which stacks count under the frames of the thread in backward(): blocks and driver allocations
// of threads with no Python frames, while that thread is in it, and nothing else; a bounded
// trace's carried blocks (thread 0) move no thread in or out of it.
#include "analyzer/model/backward_attribution.h"

#include <gtest/gtest.h>

#include <vector>

namespace gmt::analyzer {
namespace {

constexpr uint32_t kInBackward = 1;       // the caller's root gradient, in torch.autograd.backward
constexpr uint32_t kNoPython = 2;         // an autograd thread's allocation
constexpr uint32_t kOutsideBackward = 3;  // the caller's next step
constexpr uint32_t kBackwardCode = 10;
constexpr uint32_t kTrainStepCode = 11;

uint64_t frame(uint32_t code, uint32_t line) {
  return uint64_t{code} << 32 | line;
}

TraceSummary trace() {
  TraceSummary t;
  t.python_code[kBackwardCode] = {"backward", "/venv/lib/torch/autograd/__init__.py"};
  t.python_code[kTrainStepCode] = {"train_step", "/home/me/train.py"};
  t.stacks[kInBackward] = {0x1000};
  t.python_stacks[kInBackward] = {frame(kBackwardCode, 200), frame(kTrainStepCode, 25)};
  t.stacks[kNoPython] = {0x2000, 0x2100};
  t.stacks[kOutsideBackward] = {0x3000};
  t.python_stacks[kOutsideBackward] = {frame(kTrainStepCode, 30)};
  return t;
}

TEST(BackwardAttribution, AnAutogradThreadsDriverAllocationIsShownAtTheBackwardCall) {
  TraceSummary t = trace();
  BackwardAttribution backward;
  EXPECT_FALSE(backward.in_backward());
  EXPECT_EQ(backward.stack_for(t, 5, kInBackward), kInBackward);
  ASSERT_TRUE(backward.in_backward());
  const uint32_t id = backward.driver_stack_for(t, 9, kNoPython);
  ASSERT_NE(id, kNoPython);
  EXPECT_EQ(t.stacks.at(id), t.stacks.at(kNoPython));
  // The mark, then the caller's frames from the user's call out (torch.autograd's dropped).
  EXPECT_EQ(t.python_stacks.at(id),
            (std::vector<uint64_t>{uint64_t{TraceSummary::kAttributionCode} << 32,
                                   frame(kTrainStepCode, 25)}));
  // A block of the same stack shares the id; the caller's own allocations keep theirs.
  EXPECT_EQ(backward.stack_for(t, 9, kNoPython), id);
  EXPECT_EQ(backward.driver_stack_for(t, 5, kNoPython), kNoPython);
  // A driver allocation does not take the caller out of backward(); its next block does.
  EXPECT_EQ(backward.driver_stack_for(t, 5, kOutsideBackward), kOutsideBackward);
  EXPECT_TRUE(backward.in_backward());
  EXPECT_EQ(backward.stack_for(t, 5, kOutsideBackward), kOutsideBackward);
  EXPECT_FALSE(backward.in_backward());
  EXPECT_EQ(backward.driver_stack_for(t, 9, kNoPython), kNoPython);
}

TEST(BackwardAttribution, CarriedBlocksMoveNoThreadIntoBackward) {
  TraceSummary t = trace();
  BackwardAttribution backward;
  // A bounded trace's carried block (thread 0), whose frames are in backward().
  EXPECT_EQ(backward.stack_for(t, 0, kInBackward), kInBackward);
  EXPECT_FALSE(backward.in_backward());
  EXPECT_EQ(backward.driver_stack_for(t, 9, kNoPython), kNoPython);
  EXPECT_EQ(backward.stack_for(t, 9, kNoPython), kNoPython);
  // Nor out of it, and they are not attributed themselves.
  EXPECT_EQ(backward.stack_for(t, 5, kInBackward), kInBackward);
  EXPECT_EQ(backward.stack_for(t, 0, kOutsideBackward), kOutsideBackward);
  EXPECT_TRUE(backward.in_backward());
  EXPECT_EQ(backward.stack_for(t, 0, kNoPython), kNoPython);
  EXPECT_EQ(backward.driver_stack_for(t, 0, kNoPython), kNoPython);
}

}  // namespace
}  // namespace gmt::analyzer
