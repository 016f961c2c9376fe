// SPDX-License-Identifier: Apache-2.0
// fork(): a child that allocates writes its own trace, holding only its own events; a child
// that never touches CUDA (a shell, a DataLoader worker) writes nothing, and its exit must not
// disturb the parent's trace either.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>

#include "tests/integration/interception/kind_expectations.h"
#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

class ForkTraces : public TracedRun {};

// The child pid kind_ops printed for the operation `op`.
int64_t child_of(const std::string& output, const std::string& op) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(op + " ->", 0) == 0) return printed(line, "child");
  }
  ADD_FAILURE() << "no line for " << op << " in:\n" << output;
  return -1;
}

TEST_F(ForkTraces, ChildThatAllocatesGetsItsOwnTraceAndOthersLeaveNone) {
  const std::string cuda_child = "fork:cuda:" + mib(4);
  const ProcessResult r =
      run_traced("kind_ops_procaddress_12000",
                 {"cuMemAlloc:a:" + mib(1), "fork:none", cuda_child, "fork:none",
                  "cuMemAllocAsync:s:" + mib(2), "cuMemFreeAsync:s", "cuMemFree:a"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const int64_t child = child_of(r.out, cuda_child);

  const auto found = traces();
  ASSERT_EQ(found.size(), 2u) << "one for the parent, one for the child that allocated";
  const json rep = report(found);
  const int child_trace = rep["traces"][0]["pid"] == child ? 0 : 1;
  const int parent_trace = 1 - child_trace;
  ASSERT_EQ(number(rep["traces"][child_trace], "pid"), child) << rep.dump();
  EXPECT_EQ(number(rep["traces"][child_trace], "ppid"), number(rep["traces"][parent_trace], "pid"));
  EXPECT_EQ(number(rep["traces"][parent_trace], "ppid"), getpid());

  for (int t : {parent_trace, child_trace}) {
    EXPECT_EQ(rep["traces"][t]["end"], "exited") << t;
    EXPECT_EQ(rep["traces"][t]["truncated"], false) << t;
    EXPECT_EQ(number(rep["traces"][t], "unmatched_frees"), 0) << t;
  }
  ASSERT_EQ(rep["devices"].size(), 2u) << rep.dump();
  // The parent: a 1 MiB, then s 2 MiB, both freed.
  const json& parent = device(rep, parent_trace, 0);
  expect_totals(parent, {.peak_bytes = 3 * kMiB, .alloc_count = 2, .free_count = 2});
  expect_kinds(parent, {{"device", 1 * kMiB, 0}, {"stream_ordered", 2 * kMiB, 0}});
  // The child: its own 4 MiB kept and 4 MiB stream-ordered freed; nothing of the parent's.
  const json& mine = device(rep, child_trace, 0);
  expect_totals(mine, {.peak_bytes = 8 * kMiB,
                       .live_at_exit_bytes = 4 * kMiB,
                       .live_at_exit_count = 1,
                       .alloc_count = 2,
                       .free_count = 1});
  expect_kinds(mine, {{"device", 4 * kMiB, 4 * kMiB}, {"stream_ordered", 4 * kMiB, 0}});
}

}  // namespace
}  // namespace gmt::test
