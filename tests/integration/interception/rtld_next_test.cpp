// SPDX-License-Identifier: Apache-2.0
// dlsym(RTLD_NEXT, …) resolves relative to the library that calls it. The preload replaces
// dlsym, so unless it forwards such a lookup as its caller's, a wrapping library finds the
// wrong function (often itself: endless recursion). rtld_next_resolution prints where each of
// its library's lookups lands; with and without the preload the answers must be the same.
#include <gtest/gtest.h>

#include "tests/integration/interception/kind_expectations.h"
#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

class RtldNext : public TracedRun {};

TEST_F(RtldNext, LookupsFromALibraryAnswerAsWithoutThePreload) {
  const ProcessResult untraced = run_untraced("rtld_next_resolution", {});
  ASSERT_EQ(untraced.exit_code, 0) << untraced.err;
  const ProcessResult traced = run_traced("rtld_next_resolution", {});
  ASSERT_EQ(traced.exit_code, 0) << traced.err;
  EXPECT_EQ(traced.out, untraced.out);

  // What the answers are, so that the comparison is about the right thing: the driver's own
  // functions, libc's, and nothing for a name nobody defines.
  for (const char* label : {"before", "after"}) {
    const std::string l = label;
    EXPECT_NE(untraced.out.find(l + " cuMemAlloc_v2 -> libcuda.so.1:cuMemAlloc_v2\n"),
              std::string::npos)
        << untraced.out;
    EXPECT_NE(untraced.out.find(l + " cuGetProcAddress_v2 -> libcuda.so.1:cuGetProcAddress_v2\n"),
              std::string::npos)
        << untraced.out;
    EXPECT_NE(untraced.out.find(l + " dlsym -> libc.so.6:"), std::string::npos) << untraced.out;
    EXPECT_NE(untraced.out.find(l + " gmt_no_such_symbol_anywhere -> NULL\n"), std::string::npos)
        << untraced.out;
  }

  // The traced run was traced: the preload was there to get it wrong.
  const json rep = report({only_trace()});
  EXPECT_EQ(number(device(rep, 0), "alloc_count"), 1);
  EXPECT_EQ(number(device(rep, 0), "free_count"), 1);
}

}  // namespace
}  // namespace gmt::test
