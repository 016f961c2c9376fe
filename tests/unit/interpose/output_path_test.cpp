// SPDX-License-Identifier: Apache-2.0
#include "interpose/output_path.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace gmt::interpose {
namespace {

TEST(OutputPattern, ExpandsPidHostAndRank) {
  const OutputPathVars vars{4242, "node7", "3"};
  EXPECT_EQ(expand_output_pattern("gpumemtrace.%p.gmt", vars), "gpumemtrace.4242.gmt");
  EXPECT_EQ(expand_output_pattern("/t/%h/rank%r-%p.gmt", vars), "/t/node7/rank3-4242.gmt");
}

TEST(OutputPattern, KeepsLiteralPercentAndUnknownEscapes) {
  const OutputPathVars vars{1, "h", "0"};
  EXPECT_EQ(expand_output_pattern("100%%-%x-%", vars), "100%-%x-%");
  EXPECT_EQ(expand_output_pattern("plain.gmt", vars), "plain.gmt");
}

TEST(OutputPattern, RankComesFromTheLaunchersVariables) {
  unsetenv("RANK");
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("PMI_RANK");
  unsetenv("PMIX_RANK");
  unsetenv("SLURM_PROCID");
  EXPECT_EQ(rank_from_environment(), "0");
  setenv("SLURM_PROCID", "5", 1);
  EXPECT_EQ(rank_from_environment(), "5");
  setenv("RANK", "2", 1);  // torchrun's wins over Slurm's
  EXPECT_EQ(rank_from_environment(), "2");
  unsetenv("RANK");
  unsetenv("SLURM_PROCID");
}

TEST(OutputPattern, ADirectoryHoldsTheDefaultName) {
  char scratch[] = "/tmp/gmt-output-path-XXXXXX";
  ASSERT_NE(mkdtemp(scratch), nullptr);
  const std::string dir = scratch;
  EXPECT_EQ(file_pattern_of(dir), dir + "/gpumemtrace.%p.gmt");
  EXPECT_EQ(file_pattern_of(dir + "/"), dir + "/gpumemtrace.%p.gmt");
  // A name ending in '/' is a directory even before it exists, as for `run -o`.
  EXPECT_EQ(file_pattern_of(dir + "/later/"), dir + "/later/gpumemtrace.%p.gmt");
  EXPECT_EQ(file_pattern_of(dir + "/run.%p.gmt"), dir + "/run.%p.gmt");
  EXPECT_EQ(file_pattern_of("gpumemtrace.%p.gmt"), "gpumemtrace.%p.gmt");
  rmdir(scratch);
}

}  // namespace
}  // namespace gmt::interpose
