// SPDX-License-Identifier: Apache-2.0
// What was never freed, told apart on the simulated stack: address space reserved (as PyTorch's
// expandable segments reserve it) is no memory and no leak, and what a library such as cuBLAS
// keeps (here the plugin library under a file name that starts like cuBLAS's) is its own cache.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

constexpr uint64_t kGiB = 1024 * kMiB;

class LeakClasses : public TracedRun {
 protected:
  json command_json(std::vector<std::string> args) const {
    const ProcessResult r = cli(std::move(args));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  }
};

// Two reservations as expandable segments make them, one with a 2 MiB page mapped in (device 0),
// one never mapped (no device known), both kept to the end.
TEST_F(LeakClasses, ReservationsAreAddressSpaceApartFromWhatWasNeverFreed) {
  const ProcessResult run = run_traced(
      "kind_ops_procaddress_12000",
      {"cuMemAddressReserve:r:" + std::to_string(300 * kGiB), "cuMemCreate:h:" + mib(2),
       "cuMemMap:r:0:" + mib(2) + ":h", "cuMemAddressReserve:s:" + std::to_string(15 * kGiB)});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();

  const json leaks = command_json({"leaks", trace, "--json"});
  // Only the physical page was never freed.
  ASSERT_EQ(leaks["leaks"].size(), 1u) << leaks.dump(1);
  EXPECT_EQ(leaks["leaks"][0]["bytes"], 2 * kMiB);
  EXPECT_EQ(leaks["leaks"][0]["device"], 0);
  EXPECT_EQ(leaks["by_class"], (json{{"unfreed", {{"bytes", 2 * kMiB}, {"count", 1}}}}));
  ASSERT_EQ(leaks["reservations"].size(), 2u) << leaks.dump(1);
  EXPECT_EQ(leaks["reservations"][0]["bytes"], 300 * kGiB);
  EXPECT_EQ(leaks["reservations"][0]["count"], 1);
  EXPECT_EQ(leaks["reservations"][0]["device"], 0);  // from the page mapped into it
  EXPECT_EQ(leaks["reservations"][1]["bytes"], 15 * kGiB);
  EXPECT_EQ(leaks["reservations"][1]["device"], -1);
  EXPECT_FALSE(leaks["reservations"][0]["frames"].empty());

  const ProcessResult text = cli({"leaks", trace});
  EXPECT_NE(text.out.find("address space reserved, not memory: 15.0 GiB in 1 reservation "
                          "(device unknown)\n"
                          "address space reserved, not memory: 300 GiB in 1 reservation "
                          "(device 0)\n"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("cached"), std::string::npos) << text.out;

  // Neither the gate nor the peak counts them.
  const ProcessResult gate = cli({"check", trace, "--max-leak", "2MiB"});
  EXPECT_EQ(gate.exit_code, 0) << gate.out << gate.err;
  EXPECT_EQ(gate.out, "OK: peak 2.00 MiB, never freed 2.00 MiB, 0 failed allocations\n");
  const json rep = report({trace});
  EXPECT_EQ(device(rep, 0)["peak_bytes"], 2 * kMiB);
  uint64_t listed = 0;
  for (const json& g : rep["leaks"]) listed += g["bytes"].get<uint64_t>();
  EXPECT_EQ(listed, 2 * kMiB) << rep["leaks"].dump(1);
}

// The plugin allocates 48 and 16 MiB and keeps them; loaded from a file named like cuBLAS, that
// is cuBLAS's own cache, not the program's leak. Under its own name it is unfreed.
TEST_F(LeakClasses, WhatACublasNamedLibraryKeepsIsLibraryCache) {
  const ProcessResult run = run_traced("workload_dlopen_plugin", {workload("libcublas_sim.so")});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  const json leaks = command_json({"leaks", trace, "--json"});
  EXPECT_EQ(leaks["by_class"], (json{{"library_cache", {{"bytes", 64 * kMiB}, {"count", 2}}}}));
  for (const json& g : leaks["leaks"]) EXPECT_EQ(g["library"], "libcublas") << g.dump();
  const ProcessResult gate = cli({"check", trace, "--max-leak", "1"});
  EXPECT_EQ(gate.exit_code, 0) << gate.out << gate.err;
  EXPECT_EQ(gate.out, "OK: peak 64.0 MiB, never freed 0 B, 0 failed allocations\n");
  const ProcessResult text = cli({"report", trace});
  EXPECT_NE(text.out.find("  never freed   library_cache 64.0 MiB  (gpumemtrace leaks)\n"),
            std::string::npos)
      << text.out;
}

TEST_F(LeakClasses, TheSameLibraryUnderItsOwnNameIsUnfreed) {
  const ProcessResult run =
      run_traced("workload_dlopen_plugin", {workload("libgmt_plugin_allocator.so")});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  const json leaks = command_json({"leaks", trace, "--json"});
  EXPECT_EQ(leaks["by_class"], (json{{"unfreed", {{"bytes", 64 * kMiB}, {"count", 2}}}}));
  const ProcessResult gate = cli({"check", trace, "--max-leak", "1"});
  EXPECT_EQ(gate.exit_code, 1) << gate.out << gate.err;
}

}  // namespace
}  // namespace gmt::test
