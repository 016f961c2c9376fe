// SPDX-License-Identifier: Apache-2.0
// Remedies at the end of `oom` and `peak`: each one what `whatif` predicts for its change (the
// same figures), the cheapest first, none where the run fits, and none said without a reason.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

constexpr int64_t kMiB = 1 << 20;

class Remedies : public TracedRun {
 protected:
  json json_of(const std::vector<std::string>& args) const {
    std::vector<std::string> all = args;
    all.push_back("--json");
    const ProcessResult r = cli(all);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json::object();
  }
  // whatif's prediction for a remedy's options ("--batch-scale 0.5").
  json predicted(const std::string& trace, const std::string& options,
                 const std::string& device_memory) const {
    std::vector<std::string> args{"whatif", trace};
    std::istringstream words(options);
    for (std::string w; words >> w;) args.push_back(w);
    if (!device_memory.empty()) {
      args.push_back("--device-memory");
      args.push_back(device_memory);
    }
    return json_of(args)["devices"][0]["predicted"];
  }
};

// The two-layer stand-in with roles needs 62 MiB reserved (46 allocated): on 50 MiB it does not
// fit. Every remedy is whatif's own prediction for it, in the order of their cost.
TEST_F(Remedies, PeakOnASmallerDeviceOffersWhatWhatifPredicts) {
  ASSERT_EQ(run_traced("workload_roles_training", {}).exit_code, 0);
  const std::string trace = only_trace();
  const json fits = json_of({"peak", trace});
  EXPECT_EQ(fits["remedies"], json::array());
  EXPECT_EQ(fits["remedies_note"], "the run fits: nothing to remedy");
  const ProcessResult fits_text = cli({"peak", trace});
  EXPECT_EQ(fits_text.out.find("remedies"), std::string::npos) << fits_text.out;

  // The simulated CUDA context is on any device (the driver's samples show it outside the
  // allocator): the allocator's 50 MiB are on a device that much larger.
  const int64_t outside = json_of({"whatif", trace})["devices"][0]["outside_bytes"];
  EXPECT_GT(outside, 0);
  const std::string device = std::to_string(outside + 50 * kMiB);
  const json small = json_of({"peak", trace, "--device-memory", device});
  const json& remedies = small["remedies"];
  ASSERT_TRUE(remedies.is_array()) << small.dump(1);
  std::vector<std::string> changes;
  for (const json& r : remedies) changes.push_back(r["change"]);
  ASSERT_EQ(changes.size(), 6u) << remedies.dump(1);
  EXPECT_EQ(changes[0], "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  EXPECT_EQ(changes[1].rfind("batch <= x", 0), 0u) << changes[1];
  EXPECT_EQ(changes[2], "activations in bf16 (autocast)");
  EXPECT_EQ(changes[3].find("(zero1)") != std::string::npos, true) << changes[3];
  EXPECT_EQ(changes[4].find("(zero2)") != std::string::npos, true) << changes[4];
  EXPECT_EQ(changes[5].find("(zero3)") != std::string::npos, true) << changes[5];
  for (const json& r : remedies) {
    const json p = predicted(trace, r["whatif"], device);
    EXPECT_EQ(r["fits"], p["fits"]) << r.dump(1);
    EXPECT_EQ(r["saves_bytes"], 62 * kMiB - r["predicted_max_reserved_bytes"].get<int64_t>());
    if (!r["fits"].get<bool>()) continue;  // its figures stop at its failure; whatif's go on
    EXPECT_EQ(r["predicted_max_reserved_bytes"], p["max_reserved_bytes"]) << r.dump(1);
    EXPECT_EQ(r["predicted_max_allocated_bytes"], p["max_allocated_bytes"]) << r.dump(1);
    EXPECT_EQ(r["device"], 0);
  }
  // The largest batch that fits, and one step above it does not.
  EXPECT_EQ(remedies[1]["fits"], true);
  const double k = std::stod(remedies[1]["whatif"].get<std::string>().substr(14));
  EXPECT_LT(k, 1.0);
  EXPECT_FALSE(predicted(trace, "--batch-scale " + std::to_string(k + 1.0 / 32), device)["fits"]
                   .get<bool>());
  // Half the activations: 38 MiB allocated.
  EXPECT_EQ(remedies[2]["predicted_max_allocated_bytes"], 38 * kMiB);

  const ProcessResult text = cli({"peak", trace, "--device-memory", device});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("remedies, as the allocator's model predicts them (the cheapest first; "
                          "device 0 of "),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find(", reserved at most 62.0 MiB as recorded):\n"
                          "  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: "),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("[whatif --batch-scale "), std::string::npos) << text.out;
}

// The fragmented OOM (whatif_test.cpp's): no roles, so only an allocator setting is offered, as
// whatif predicts it.
TEST_F(Remedies, OomEndsWithTheRemediesOfItsFailure) {
  const ProcessResult run = run_traced("workload_cached_training", {"fragment"},
                                       {{"SIM_ALLOCATOR", "pytorch"},
                                        {"FAKECUDA_DEVICE_MEMORY", "33554432"},
                                        {"FAKECUDA_CONTEXT_OVERHEAD", "0"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  const json oom = json_of({"oom", trace});
  ASSERT_EQ(oom["remedies"].size(), 1u) << oom.dump(1);
  const json& r = oom["remedies"][0];
  EXPECT_EQ(r["change"], "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  EXPECT_EQ(r["whatif"], "--alloc-conf expandable_segments:True");
  const json p = predicted(trace, r["whatif"], "");
  EXPECT_EQ(r["fits"], p["fits"]);
  if (r["fits"].get<bool>()) {
    EXPECT_EQ(r["predicted_max_reserved_bytes"], p["max_reserved_bytes"]);
  }
  EXPECT_EQ(oom["remedies_note"], nullptr);
  const ProcessResult text = cli({"oom", trace});
  EXPECT_NE(text.out.find("remedies, as the allocator's model predicts them"), std::string::npos)
      << text.out;

  // A trace without PyTorch's block events: nothing said of remedies.
  ASSERT_EQ(run_traced("workload_cached_training", {"2"}).exit_code, 0);
  std::string without;
  for (const std::string& t : traces()) {
    if (t != trace) without = t;
  }
  ASSERT_FALSE(without.empty());
  const json other = json_of({"oom", without});
  EXPECT_FALSE(other.contains("remedies")) << other.dump(1);
}

}  // namespace
}  // namespace gmt::test
