// SPDX-License-Identifier: Apache-2.0
// The runtime's names we export (cudaMalloc@libcudart.so.13, ...) must reach the runtime the
// caller was linked against, and must not make a missing runtime look present.
#include <gtest/gtest.h>

#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

class RuntimeNames : public TracedRun {
 protected:
  // Runs the workload without us and then with us; both must succeed and print the same. Returns
  // what they printed.
  std::string same_output_traced_and_untraced(const std::string& name,
                                              std::vector<std::string> ops = {}) {
    const ProcessResult untraced = run_untraced(name, ops);
    EXPECT_EQ(untraced.exit_code, 0) << untraced.err;
    const ProcessResult traced = run_traced(name, ops);
    EXPECT_EQ(traced.exit_code, 0) << traced.err;
    EXPECT_EQ(traced.out, untraced.out);
    return untraced.out;
  }

  json info() const {
    const ProcessResult result = cli({"info", "--json", only_trace()});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return json::parse(result.out);
  }
};

// libcudart.so.13 for the program, libcudart.so.12 for a plugin it loads privately: each runtime
// keeps its own last error, so the lines the program prints show which runtime served each call.
// They must be the same with the preload as without, and the trace must name every call.
TEST_F(RuntimeNames, EachRuntimeServesItsOwnCallers) {
  EXPECT_EQ(same_output_traced_and_untraced("workload_two_runtimes"),
            "program cudaMalloc 4 MiB -> 0\n"
            "library cudaMalloc 8 MiB -> 0\n"
            "library cudaMalloc 1 PiB -> 2\n"
            "library last error -> 2\n"
            "program last error -> 0\n"
            "program cudaMalloc 1 PiB -> 2\n"
            "library last error -> 0\n"
            "program last error -> 2\n"
            "library cudaMalloc 16 MiB -> 0\n"
            "library cudaFree -> 0\n"
            "program cudaFree -> 0\n");

  const json i = info();
  EXPECT_EQ(i["allocations_by_api"], json::parse(R"({"cudaMalloc": 3})"));
  EXPECT_EQ(i["frees_by_api"], json::parse(R"({"cudaFree": 2})"));
  const json r = report({only_trace()});
  ASSERT_EQ(r["ooms"].size(), 2u) << r.dump();
  for (const json& oom : r["ooms"]) {
    EXPECT_EQ(oom["api"], "cudaMalloc");
    EXPECT_EQ(oom["driver_api"], "cuMemAlloc");
    EXPECT_EQ(oom["requested_bytes"], uint64_t{1} << 50);
  }
  EXPECT_EQ(number(r, "devices.0.peak_bytes"), static_cast<int64_t>(28 * kMiB));
  // The wrappers the calls went through are ours: no stack shows them.
  EXPECT_EQ(r.dump().find("libgpumemtrace"), std::string::npos);
  EXPECT_NE(r.dump().find("two_runtimes.cpp"), std::string::npos);
}

// A program that probes for the runtime with dlsym finds it exactly when it would without us:
// not before it is loaded, not while it is loaded privately, and once it is global. An
// unversioned lookup finds the runtime's own function, not our wrapper (ours are exported under
// the runtimes' version nodes only), so what it allocates carries the driver's names.
TEST_F(RuntimeNames, LookupsFindTheRuntimeOnlyWhereItIs) {
  EXPECT_EQ(same_output_traced_and_untraced("workload_runtime_lookup"),
            "no runtime: default=0 next=0 self=0\n"
            "runtime loaded locally: default=0 next=0 self=0\n"
            "runtime made global: default=1 next=1 self=1\n"
            "cudaMalloc -> 0\n"
            "cudaFree -> 0\n");
  const json i = info();
  EXPECT_EQ(i["allocations_by_api"], json::parse(R"({"cuMemAlloc": 1})"));
  EXPECT_EQ(i["frees_by_api"], json::parse(R"({"cuMemFree": 1})"));
}

// A runtime loaded with RTLD_DEEPBIND (its dlsym binds to the C library's, not ours) or into
// another namespace with dlmopen (which has no preload) is out of our sight: the program must
// run exactly as without us, and leave no trace since nothing it did reached our hooks.
TEST_F(RuntimeNames, IsolatedRuntimesRunUntouched) {
  // Neither can run under a sanitizer, with or without us: it refuses RTLD_DEEPBIND
  // (google/sanitizers#611), and a new namespace would need a second copy of its runtime.
  if (!sanitizer_runtime().empty())
    GTEST_SKIP() << "RTLD_DEEPBIND and dlmopen cannot run under a sanitizer";
  for (const std::string mode : {"deepbind", "dlmopen"}) {
    EXPECT_EQ(same_output_traced_and_untraced("workload_isolated_runtime", {mode}),
              "cudaMalloc -> 0\ncudaFree -> 0\n")
        << mode;
    EXPECT_EQ(traces().size(), 0u) << mode;
  }
}

}  // namespace
}  // namespace gmt::test
