// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace whatif` end to end, on the simulated allocator that reports its blocks as
// PyTorch's trace tracker does (tests/workloads/caching_allocator.cpp, SIM_ALLOCATOR=pytorch):
// the unchanged replay reproduces its run, the figures are its own, a smaller or larger device
// changes the verdict, and bad input gets one line and its exit status.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

constexpr int64_t kMiB = 1 << 20;

class WhatIf : public TracedRun {
 protected:
  json whatif_json(const std::vector<std::string>& args) const {
    std::vector<std::string> all{"whatif"};
    all.insert(all.end(), args.begin(), args.end());
    all.push_back("--json");
    const ProcessResult r = cli(all);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json::object();
  }
};

TEST_F(WhatIf, TheUnchangedReplayReproducesTheTrainingLoop) {
  const ProcessResult run =
      run_traced("workload_cached_training", {"60"}, {{"SIM_ALLOCATOR", "pytorch"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  const json w = whatif_json({trace});
  ASSERT_EQ(w["devices"].size(), 1u) << w.dump(1);
  const json& d = w["devices"][0];
  EXPECT_EQ(d["device"], 0);
  EXPECT_EQ(d["total_bytes"], 16LL * 1024 * kMiB);  // the simulated GPU
  // The allocator never gives a segment back here: its highest reserved is its last.
  EXPECT_EQ(d["recorded"]["max_reserved_bytes"], printed(run.out, "reserved"));
  EXPECT_EQ(d["predicted"]["max_reserved_bytes"], d["recorded"]["max_reserved_bytes"]);
  EXPECT_EQ(d["predicted"]["max_allocated_bytes"], d["recorded"]["max_allocated_bytes"]);
  EXPECT_EQ(d["predicted"]["fits"], true);
  EXPECT_EQ(w["changed"], false);
  const json& f = w["fidelity"];
  EXPECT_EQ(f["exact"], true) << f.dump(1);
  ASSERT_EQ(f["devices"].size(), 1u);
  EXPECT_EQ(f["devices"][0]["divergence"], nullptr);
  EXPECT_EQ(f["devices"][0]["segments"]["recorded"], printed(run.out, "segments"));
  EXPECT_EQ(f["devices"][0]["segments"]["matched"], printed(run.out, "segments"));

  const ProcessResult text = cli({"whatif", trace});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("recorded      predicted\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("verdict: fits in 16.0 GiB"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("fidelity: exact"), std::string::npos) << text.out;
}

// Five 4 MiB blocks in a 20 MiB segment, two freed apart, then 6 MiB on a 32 MiB device: the
// allocator gives back its free small segment, and the retry fails too. The replay fails it
// the same way; on a 64 MiB device it would take its segment and fit.
TEST_F(WhatIf, TheFragmentedOomIsReproducedAndALargerDeviceFits) {
  const ProcessResult run = run_traced("workload_cached_training", {"fragment"},
                                       {{"SIM_ALLOCATOR", "pytorch"},
                                        {"FAKECUDA_DEVICE_MEMORY", "33554432"},
                                        {"FAKECUDA_CONTEXT_OVERHEAD", "0"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(printed(run.out, "oom"), 1) << run.out;
  const std::string trace = only_trace();

  const json w = whatif_json({trace});
  ASSERT_EQ(w["devices"].size(), 1u) << w.dump(1);
  const json& d = w["devices"][0];
  EXPECT_EQ(d["total_bytes"], 32 * kMiB);
  EXPECT_EQ(d["recorded"]["ooms"], 1);
  EXPECT_EQ(d["recorded"]["max_reserved_bytes"], 22 * kMiB);
  EXPECT_EQ(d["predicted"]["max_reserved_bytes"], 22 * kMiB);
  EXPECT_EQ(d["predicted"]["fits"], false);
  EXPECT_EQ(d["predicted"]["first_failed_request_bytes"], 6 * kMiB);
  const json& f = w["fidelity"]["devices"][0];
  EXPECT_EQ(w["fidelity"]["exact"], true) << f.dump(1);
  EXPECT_EQ(f["allocator_releases"], 1);
  EXPECT_EQ(f["empty_cache_mirrored"], 0);

  const json larger = whatif_json({trace, "--device-memory", "64MiB"});
  const json& l = larger["devices"][0];
  EXPECT_EQ(larger["changed"], true);
  EXPECT_EQ(larger["device_memory_bytes"], 64 * kMiB);
  EXPECT_EQ(l["total_bytes"], 64 * kMiB);
  EXPECT_EQ(l["predicted"]["fits"], true);
  EXPECT_EQ(l["predicted"]["max_reserved_bytes"], 42 * kMiB);  // 2 + 20 + 20 MiB
  EXPECT_EQ(l["predicted"]["recorded_failures_served"], 1);
  EXPECT_EQ(l["predicted"]["exact"], true);  // the unchanged replay's fidelity

  const ProcessResult text = cli({"whatif", trace, "--device-memory", "64MiB"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("verdict: fits in 64.0 MiB"), std::string::npos) << text.out;
  const ProcessResult small = cli({"whatif", trace});
  EXPECT_NE(small.out.find("verdict: does not fit: a request of 6.00 MiB fails"), std::string::npos)
      << small.out;
}

TEST_F(WhatIf, BadInputGetsOneLine) {
  const ProcessResult run = run_traced("workload_cached_training", {"2"});  // allocator "other"
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  const ProcessResult none = cli({"whatif", trace});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("no PyTorch block events"), std::string::npos) << none.err;

  const ProcessResult conf = cli({"whatif", trace, "--alloc-conf", "expandable_segments:Maybe"});
  EXPECT_EQ(conf.exit_code, 2);
  EXPECT_NE(conf.err.find("--alloc-conf"), std::string::npos) << conf.err;
  const ProcessResult size = cli({"whatif", trace, "--device-memory", "lots"});
  EXPECT_EQ(size.exit_code, 2);
  EXPECT_NE(size.err.find("--device-memory: expected a size"), std::string::npos) << size.err;
  const ProcessResult missing = cli({"whatif", dir_ + "/nothing.gmt"});
  EXPECT_EQ(missing.exit_code, 1);
}

}  // namespace
}  // namespace gmt::test
