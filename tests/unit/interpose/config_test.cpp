// SPDX-License-Identifier: Apache-2.0
// The environment's switches: a value other than the accepted ones is told, by name, value and
// what is accepted, and the default is kept.
#include "interpose/config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace gmt::interpose {
namespace {

std::vector<std::string>& warnings() {
  static std::vector<std::string> told;
  return told;
}

void collect(const std::string& message) {
  warnings().push_back(message);
}

class ConfigSwitches : public ::testing::Test {
 protected:
  void SetUp() override { warnings().clear(); }
  void TearDown() override {
    for (const char* name : {"GPUMEMTRACE_DEBUG", "GPUMEMTRACE_TORCH_BLOCKS", "GPUMEMTRACE_STACKS",
                             "GPUMEMTRACE_UNWIND", "GPUMEMTRACE_ROLES"})
      unsetenv(name);
  }
};

TEST_F(ConfigSwitches, AcceptedValuesAreTakenSilently) {
  setenv("GPUMEMTRACE_DEBUG", "1", 1);
  setenv("GPUMEMTRACE_TORCH_BLOCKS", "0", 1);
  setenv("GPUMEMTRACE_UNWIND", "libunwind", 1);
  setenv("GPUMEMTRACE_ROLES", "0", 1);
  const Config config = Config::from_environment(collect);
  EXPECT_TRUE(config.debug_lookups);
  EXPECT_FALSE(config.torch_blocks);
  EXPECT_FALSE(config.roles);
  EXPECT_TRUE(config.libunwind_only);
  EXPECT_TRUE(warnings().empty());
}

TEST_F(ConfigSwitches, AnyOtherValueIsToldAndTheDefaultKept) {
  setenv("GPUMEMTRACE_DEBUG", "yes", 1);
  setenv("GPUMEMTRACE_TORCH_BLOCKS", "off", 1);
  setenv("GPUMEMTRACE_STACKS", "some", 1);
  setenv("GPUMEMTRACE_UNWIND", "frame-pointers", 1);
  const Config config = Config::from_environment(collect);
  EXPECT_FALSE(config.debug_lookups);
  EXPECT_TRUE(config.torch_blocks);
  EXPECT_EQ(config.stacks, StackMode::kAll);
  EXPECT_FALSE(config.libunwind_only);
  EXPECT_EQ(warnings(), (std::vector<std::string>{
                            "GPUMEMTRACE_DEBUG='yes' is not one of 0, 1; using 0",
                            "GPUMEMTRACE_TORCH_BLOCKS='off' is not one of 0, 1; using 1",
                            "GPUMEMTRACE_STACKS='some' is not one of none, native, python, all; "
                            "using all",
                            "GPUMEMTRACE_UNWIND='frame-pointers' is not one of walker, "
                            "libunwind; using walker"}));
}

}  // namespace
}  // namespace gmt::interpose
