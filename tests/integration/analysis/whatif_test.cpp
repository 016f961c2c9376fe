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

#include "analyzer/model/roles/role.h"
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
  // The fragmented OOM: five 4 MiB blocks in a 20 MiB segment, two freed apart, then 6 MiB on a
  // 32 MiB device with no context overhead.
  ProcessResult run_fragmented() {
    return run_traced("workload_cached_training", {"fragment"},
                      {{"SIM_ALLOCATOR", "pytorch"},
                       {"FAKECUDA_DEVICE_MEMORY", "33554432"},
                       {"FAKECUDA_CONTEXT_OVERHEAD", "0"}});
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
  const ProcessResult run = run_fragmented();
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

// A program that fills the device until a request fails, catches the failure and goes on: on a
// larger device the recorded failure is served, but the program would have filled more before
// failing (it does: 15 blocks on 64 MiB against 5 on 32) and its last request then fails. What
// it asked for after its failure answered it, so there is no verdict, and no remedy past it.
TEST_F(WhatIf, AfterAFailureTheProgramCaughtNothingIsPredicted) {
  const std::map<std::string, std::string> on32 = {{"SIM_ALLOCATOR", "pytorch"},
                                                   {"FAKECUDA_DEVICE_MEMORY", "33554432"},
                                                   {"FAKECUDA_CONTEXT_OVERHEAD", "0"}};
  const ProcessResult run = run_traced("workload_cached_training", {"fill"}, on32);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "filled=5\noom=1\n");
  std::map<std::string, std::string> on64 = on32;
  on64["FAKECUDA_DEVICE_MEMORY"] = "67108864";
  const ProcessResult larger_run = run_untraced("workload_cached_training", {"fill"}, on64);
  EXPECT_EQ(larger_run.out, "filled=15\noom=1\n");
  const std::string trace = only_trace();

  const json recorded = whatif_json({trace});
  EXPECT_EQ(recorded["devices"][0]["predicted"]["fits"], false);  // the recorded device: it failed

  const json w = whatif_json({trace, "--device-memory", "64MiB"});
  const json& p = w["devices"][0]["predicted"];
  EXPECT_TRUE(p["fits"].is_null()) << p.dump(1);
  EXPECT_EQ(p["not_predicted_after_failure"], true);
  EXPECT_EQ(p["recorded_failures_served"], 2);  // the fill's failure and the last request
  EXPECT_EQ(p["requests_after_served_failure"], 1);
  const ProcessResult text = cli({"whatif", trace, "--device-memory", "64MiB"});
  EXPECT_NE(text.out.find("verdict: not predicted: the request of 4.00 MiB that failed in the "
                          "recording is served, but the program caught that failure and went on "
                          "(1 more request(s)"),
            std::string::npos)
      << text.out;

  // On 40 MiB the run as recorded gets past its failure: not "the run fits".
  const ProcessResult peak = cli({"peak", trace, "--device-memory", "40MiB", "--json"});
  ASSERT_EQ(peak.exit_code, 0) << peak.err;
  const json remedies = json::parse(peak.out);
  EXPECT_EQ(remedies["remedies"], json::array());
  EXPECT_EQ(remedies["remedies_note"],
            "the program caught its failure and went on, and what it asked for after the failure "
            "answered it: nothing is predicted past it (on this device the request that failed "
            "is served)");
}

// The two-layer stand-in with roles (tests/workloads/roles_training.cpp): the most is held in
// step 2 when fc2's gradient is made, parameters 8, optimizer state 16, input 2, activations 16,
// gradient 4 MiB, in segments of 20 (weights, input, fc1's kept, then AdamW's state), 2 (the
// 1 MiB temporaries), 20 (fc2's kept, then gradients and state) and 20 MiB (step 2's kept):
// 62 MiB reserved, 16 of them cached.
json role_bytes(const json& device, const char* which) {
  json out = json::object();
  for (const auto& [role, figures] : device["by_role"].items()) {
    if (figures[which] != 0) out[role] = figures[which];
  }
  return out;
}

TEST_F(WhatIf, ByRoleAtTheHighestAllocated) {
  const ProcessResult run = run_traced("workload_roles_training", {});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  const json w = whatif_json({trace});
  EXPECT_EQ(w["roles_recorded"], true);
  EXPECT_EQ(w["fidelity"]["exact"], true) << w["fidelity"].dump(1);
  const json& d = w["devices"][0];
  EXPECT_EQ(d["recorded"]["max_allocated_bytes"], printed(run.out, "peak_allocated"));
  const json expected = {
      {"parameter", 8 * kMiB},   {"gradient", 4 * kMiB}, {"optimizer_state", 16 * kMiB},
      {"activation", 16 * kMiB}, {"input", 2 * kMiB},    {"allocator_cache", 16 * kMiB}};
  EXPECT_EQ(role_bytes(d, "recorded_bytes"), expected) << d["by_role"].dump(1);
  EXPECT_EQ(role_bytes(d, "predicted_bytes"), expected) << d["by_role"].dump(1);
  EXPECT_EQ(d["by_role"].size(), analyzer::kRoleCount);  // every role, for scripts

  const ProcessResult text = cli({"whatif", trace});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("at the highest allocated, by role:\n"
                          "    parameter        8.00 MiB      8.00 MiB\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("    allocator_cache  16.0 MiB      16.0 MiB\n"), std::string::npos)
      << text.out;
}

// Twice the batch: the input 4 MiB, each layer's kept 16 MiB (a segment of its own: from
// 10 MiB a segment fits its request), the temporaries 2 MiB (the large pool now). Step 2 holds
// parameters 8, state 16, input 4, activations 32, gradient 4 = 64 MiB; its segments: 20 (the
// weights, inputs, temporaries and gradients), 16 (step 1's fc1, then AdamW's state), 16 (step
// 1's fc2, then step 2's fc1), 16 (step 2's fc2) = 68 MiB, 4 cached.
// whatif --batch-from: the roles workload at batches 1, 2 and 3. What each layer keeps grows
// with the batch but not in proportion (6 x BATCH + 2 MiB), the input in proportion (2 x BATCH
// MiB). Fitted through the runs at 1 and 2 (their inputs: a ratio of 2), the run at 1 scaled x3
// reaches the run at 3's recorded highest allocated: 8 (parameters) + 16 (state) + 6 (input) +
// 2 x 20 (kept) + 4 (a gradient) = 74 MiB; scaled in proportion, 8 + 16 + 6 + 2 x 24 + 4 = 82 MiB.
TEST_F(WhatIf, ABatchFittedFromARunAtAnotherBatchPredictsARunAtAThird) {
  const std::string at1 = traced_run("workload_roles_training", {"1", "1"});
  const std::string at2 = traced_run("workload_roles_training", {"1", "2"});
  const std::string at3 = traced_run("workload_roles_training", {"1", "3"});
  ASSERT_FALSE(at1.empty() || at2.empty() || at3.empty());
  EXPECT_EQ(whatif_json({at3})["devices"][0]["recorded"]["max_allocated_bytes"], 74 * kMiB);

  const json fitted = whatif_json({at1, "--batch-from", at2, "--batch-scale", "3"});
  EXPECT_EQ(fitted["batch_from"]["batch_ratio"], 2.0);
  EXPECT_EQ(fitted["batch_from"]["matched_requests"], fitted["batch_from"]["requests"]);
  EXPECT_EQ(fitted["batch_from"]["requests"], 20u);  // 2 parameters, 4 of state, 7 a step
  EXPECT_EQ(fitted["devices"][0]["predicted"]["max_allocated_bytes"], 74 * kMiB);
  const json linear = whatif_json({at1, "--batch-scale", "3"});
  EXPECT_EQ(linear["devices"][0]["predicted"]["max_allocated_bytes"], 82 * kMiB);
  // The largest batch is searched with the fit too: it is larger than in proportion.
  const uint64_t outside = fitted["devices"][0]["outside_bytes"];
  const std::string device = std::to_string(outside + 200 * kMiB);
  const json fitted_on_200 = whatif_json({at1, "--batch-from", at2, "--device-memory", device});
  const json linear_on_200 = whatif_json({at1, "--largest-batch", "--device-memory", device});
  EXPECT_GT(fitted_on_200["largest_batch_scale"]["largest_fitting"].get<double>(),
            linear_on_200["largest_batch_scale"]["largest_fitting"].get<double>());

  const ProcessResult text = cli({"whatif", at1, "--batch-from", at2, "--batch-scale", "3"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("batch from: " + at2 +
                          ": its batch x2 of this run's (by their inputs); 20 of 20 requests "
                          "matched there and fitted"),
            std::string::npos)
      << text.out;
  // A run at the same batch says nothing of how sizes grow with it.
  const ProcessResult same = cli({"whatif", at1, "--batch-from", at1, "--batch-scale", "3"});
  EXPECT_EQ(same.exit_code, 1);
  EXPECT_NE(same.err.find("--batch-from: the two runs' inputs are of the same size"),
            std::string::npos)
      << same.err;
}

// whatif --set-to-none on the roles workload run with zero_grad(set_to_none=False): its
// gradients (2 x 4 MiB) kept from the first backward, the second adding a new 4 MiB one into
// each. Recorded: 8 (parameters) + 16 (state) + 2 (input) + 16 (activations) + 8 (gradients) + 4
// (the new one) = 54 MiB. Set to None at each step's end, the second backward's new gradient is
// the gradient: 46 MiB, what the same workload set to None recorded itself.
TEST_F(WhatIf, SettingGradientsToNonePredictsTheRunThatDid) {
  const std::string kept = traced_run("workload_roles_training", {"1", "1", "keep"});
  const std::string set_to_none = traced_run("workload_roles_training", {});
  ASSERT_FALSE(kept.empty() || set_to_none.empty());
  EXPECT_EQ(whatif_json({kept})["devices"][0]["recorded"]["max_allocated_bytes"], 54 * kMiB);
  EXPECT_EQ(whatif_json({set_to_none})["devices"][0]["recorded"]["max_allocated_bytes"], 46 * kMiB);

  const json predicted = whatif_json({kept, "--set-to-none"});
  EXPECT_EQ(predicted["changed"], true);
  EXPECT_EQ(predicted["devices"][0]["predicted"]["max_allocated_bytes"], 46 * kMiB);
  EXPECT_EQ(predicted["set_to_none"],
            json({{"steps", 2}, {"gradients_freed", 4}, {"temporaries_kept", 2}}));
  const ProcessResult text = cli({"whatif", kept, "--set-to-none"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("change: zero_grad(set_to_none=True)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("set to none: the gradients freed at the ends of 2 optimizer steps (4 "
                          "blocks); 2 of the backwards' temporaries kept as the gradients made "
                          "anew"),
            std::string::npos)
      << text.out;
  // A run that set them to None already: nothing to change, said so.
  const ProcessResult already = cli({"whatif", set_to_none, "--set-to-none"});
  EXPECT_EQ(already.exit_code, 1);
  EXPECT_NE(already.err.find("--set-to-none: this run already makes its gradients anew in each "
                             "backward"),
            std::string::npos)
      << already.err;
}

// A what-if replay does not run again the optimizer steps that repeat the one before from the
// same allocator state, and says so (steps_skipped); every other figure is the same as when it
// replays every step (GPUMEMTRACE_REPLAY_EVERY_STEP=1). The roles workload over 12 steps: from
// one step's end to the next, 11 windows, each asking what the one before asked; at batch x2
// the allocator's state settles in the first windows (best fit takes, of equal free blocks, the
// one in the newest segment, placed below the others as CUDA placed them) and repeats from the
// fifth window's beginning, so the 7 from the fifth on are skipped; with set_to_none the 9 from
// the third on. Over 2 steps there is nothing to skip.
TEST_F(WhatIf, RepeatedStepsAreSkippedWithTheSameFigures) {
  const std::string twelve = traced_run("workload_roles_training", {"1", "1", "-", "12"});
  const std::string kept = traced_run("workload_roles_training", {"1", "1", "keep", "12"});
  const std::string two = traced_run("workload_roles_training", {});
  ASSERT_FALSE(twelve.empty() || kept.empty() || two.empty());
  const auto without_skipped = [](json j) {
    j.erase("steps_skipped");
    return j;
  };
  const std::vector<std::vector<std::string>> changes = {
      {twelve, "--batch-scale", "2"},
      {twelve, "--alloc-conf", "expandable_segments:True"},
      {twelve, "--shard", "2"},
      {twelve, "--dtype", "activation=bf16"},
      {twelve, "--largest-batch", "--device-memory", "400MiB"},
      {twelve, "--device-memory", "320MiB"},  // 20 MiB left beside the context: fails
      {kept, "--set-to-none"},
      {kept, "--batch-scale", "3"}};
  for (const std::vector<std::string>& change : changes) {
    std::vector<std::string> args{"whatif"};
    args.insert(args.end(), change.begin(), change.end());
    args.push_back("--json");
    const ProcessResult skipping = cli(args);
    const ProcessResult every = cli(args, {{"GPUMEMTRACE_REPLAY_EVERY_STEP", "1"}});
    ASSERT_EQ(skipping.exit_code, 0) << skipping.err;
    ASSERT_EQ(every.exit_code, 0) << every.err;
    const json a = json::parse(skipping.out), b = json::parse(every.out);
    EXPECT_EQ(b["steps_skipped"], 0) << change[1];
    EXPECT_EQ(without_skipped(a), without_skipped(b)) << change[1];
  }
  EXPECT_EQ(whatif_json({twelve, "--batch-scale", "2"})["steps_skipped"], 7);
  EXPECT_EQ(whatif_json({kept, "--set-to-none"})["steps_skipped"], 9);
  EXPECT_EQ(whatif_json({two, "--batch-scale", "2"})["steps_skipped"], 0);
  // The device too small: the replay fails in the first step, before any repeat.
  const json failed = whatif_json({twelve, "--device-memory", "320MiB"});
  EXPECT_EQ(failed["devices"][0]["predicted"]["fits"], false);
  EXPECT_EQ(failed["steps_skipped"], 0);
}

// A prediction with less than 2 % of the capacity to spare is no verdict: at batch x2 the run
// reserves at most 68 MiB; the allocator may hold 69 MiB (1.38 MiB kept: too close) or 70 MiB
// (1.4 MiB kept, 68.6 left: it fits).
// Within the margin at the full capacity, but fitting with the margin taken off: it fits, and
// says so. The fragmented run (two 20 MiB segments, one freed in pieces) on 42 MiB reserves all
// 42 MiB; on 42 MiB less 2 % the allocator releases its free segment and retries, and reserves
// 40 MiB. On 40 MiB a request fails with the margin off: too close to call.
TEST_F(WhatIf, WithinTheMarginItFitsWhereItFitsWithTheMarginTakenOff) {
  const ProcessResult run = run_fragmented();
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  const json fits = whatif_json({trace, "--device-memory", "42MiB"});
  const json& p = fits["devices"][0]["predicted"];
  EXPECT_EQ(fits["margin_replays"], 1);
  EXPECT_EQ(p["fits"], true);
  EXPECT_EQ(p["too_close"], false);
  EXPECT_EQ(p["fits_with_margin"], true);
  EXPECT_EQ(p["max_reserved_bytes"], 42 * kMiB);
  const json close = whatif_json({trace, "--device-memory", "40MiB"});
  EXPECT_EQ(close["margin_replays"], 1);
  EXPECT_EQ(close["devices"][0]["predicted"]["fits"], false);
  EXPECT_EQ(close["devices"][0]["predicted"]["too_close"], true);
  EXPECT_EQ(close["devices"][0]["predicted"]["fits_with_margin"], false);

  const ProcessResult text = cli({"whatif", trace, "--device-memory", "42MiB"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("verdict: fits in 42.0 MiB, with the model's margin (2 %, 860 KiB) to "
                          "spare: it reserves up to 42.0 MiB of the 42.0 MiB the allocator may "
                          "hold, and fits in that less the margin too (reserving 40.0 MiB, its "
                          "cache released on the way)"),
            std::string::npos)
      << text.out;
}

TEST_F(WhatIf, APredictionWithinTheMarginIsTooCloseToCall) {
  ASSERT_EQ(run_traced("workload_roles_training", {}).exit_code, 0);
  const std::string trace = only_trace();
  const uint64_t outside = whatif_json({trace})["devices"][0]["outside_bytes"];
  const auto at = [&](uint64_t capacity) {
    return whatif_json(
        {trace, "--batch-scale", "2", "--device-memory", std::to_string(outside + capacity)});
  };
  const json close = at(69 * kMiB)["devices"][0];
  EXPECT_EQ(close["predicted"]["max_reserved_bytes"], 68 * kMiB);
  EXPECT_EQ(close["predicted"]["fits"], false);
  EXPECT_EQ(close["predicted"]["too_close"], true);
  EXPECT_EQ(close["predicted"]["margin_bytes"], 69 * kMiB / 100 * 2);
  const json fits = at(70 * kMiB)["devices"][0];
  EXPECT_EQ(fits["predicted"]["fits"], true);
  EXPECT_EQ(fits["predicted"]["too_close"], false);

  const ProcessResult text = cli({"whatif", trace, "--batch-scale", "2", "--device-memory",
                                  std::to_string(outside + 69 * kMiB)});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("verdict: too close to call: reserved at most 68.0 MiB of the 69.0 MiB "
                          "the allocator may hold, less than the model's margin (2 %, 1.38 MiB) "
                          "to spare"),
            std::string::npos)
      << text.out;
}

TEST_F(WhatIf, TheBatchScalesActivationsTemporariesAndInputsOnly) {
  ASSERT_EQ(run_traced("workload_roles_training", {}).exit_code, 0);
  const std::string trace = only_trace();
  const json w = whatif_json({trace, "--batch-scale", "2"});
  EXPECT_EQ(w["changed"], true);
  EXPECT_EQ(w["batch_scale"], 2.0);
  const json& d = w["devices"][0];
  EXPECT_EQ(d["predicted"]["max_allocated_bytes"], 64 * kMiB);
  EXPECT_EQ(d["predicted"]["max_reserved_bytes"], 68 * kMiB);
  const json expected = {
      {"parameter", 8 * kMiB},   {"gradient", 4 * kMiB}, {"optimizer_state", 16 * kMiB},
      {"activation", 32 * kMiB}, {"input", 4 * kMiB},    {"allocator_cache", 4 * kMiB}};
  EXPECT_EQ(role_bytes(d, "predicted_bytes"), expected) << d["by_role"].dump(1);
  // The simulated device is 16 GiB: 8 + 16 + 4 + 18K MiB within it, K < 909.
  EXPECT_EQ(w["largest_batch_scale"]["capped"], false) << w["largest_batch_scale"].dump(1);
  EXPECT_LT(w["largest_batch_scale"]["largest_fitting"].get<double>(), 909.0);
  // Past twice the recorded batch the search stops within 1/64 of the scale: the largest it
  // gives fits, the smallest it saw fail does not, in a few replays.
  const json& wide = w["largest_batch_scale"];
  const double big = wide["largest_fitting"];
  const double failing = wide["smallest_failing"];
  EXPECT_GT(big, 700.0);
  EXPECT_GT(failing, big);
  EXPECT_LE(failing - big, big / 64) << wide.dump(1);
  EXPECT_LE(wide["replays"].get<int>(), 8) << wide.dump(1);
  const auto fits_on_recorded = [&](double k) {
    return whatif_json(
               {trace, "--batch-scale", std::to_string(k)})["devices"][0]["predicted"]["fits"]
        .get<bool>();
  };
  EXPECT_TRUE(fits_on_recorded(big));
  EXPECT_FALSE(fits_on_recorded(failing));

  // The simulated CUDA context, as the driver's samples show it outside the allocator, is on any
  // device: the allocator's 100 MiB are on a device that much larger.
  const uint64_t outside = d["outside_bytes"];
  EXPECT_GT(outside, 0u);
  EXPECT_EQ(d["capacity_bytes"], d["total_bytes"].get<uint64_t>() - outside);
  const std::string device_memory = std::to_string(outside + 100 * kMiB);
  // On 100 MiB: the largest scale fits, one step more does not.
  const json on100 = whatif_json({trace, "--batch-scale", "2", "--device-memory", device_memory});
  const json& search = on100["largest_batch_scale"];
  ASSERT_TRUE(search["largest_fitting"].is_number()) << search.dump(1);
  const double largest = search["largest_fitting"];
  EXPECT_EQ(search["step"], 1.0 / 32);
  EXPECT_EQ(search["capped"], false);
  EXPECT_GT(largest, 2.0);
  EXPECT_LT(largest, 4.0);  // 8 + 16 + 4 + 18K MiB must fit 100 MiB: K < 4
  const auto fits_at = [&](double k) {
    const json a =
        whatif_json({trace, "--batch-scale", std::to_string(k), "--device-memory", device_memory});
    return a["devices"][0]["predicted"]["fits"].get<bool>();
  };
  EXPECT_TRUE(fits_at(largest));
  EXPECT_FALSE(fits_at(largest + 1.0 / 32));

  const ProcessResult text =
      cli({"whatif", trace, "--batch-scale", "2", "--device-memory", device_memory});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("change: batch x2, device memory "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("held outside PyTorch's allocator, as the recording's samples of the "
                          "driver show: "),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("largest batch that fits: x"), std::string::npos) << text.out;
  EXPECT_NE(
      text.out.find(
          "(with 2 % of what the allocator may hold to spare; searched in steps of x0.03125, "),
      std::string::npos)
      << text.out;
}

// ZeRO-1 over 2 ranks halves AdamW's state (16 to 8 MiB at the peak), ZeRO-2 the gradient too,
// ZeRO-3 the parameters too; bf16 activations halve the activations.
TEST_F(WhatIf, ShardAndDtypeDivideTheirRoles) {
  ASSERT_EQ(run_traced("workload_roles_training", {}).exit_code, 0);
  const std::string trace = only_trace();
  const auto peak = [&](const std::vector<std::string>& change) {
    std::vector<std::string> args{trace};
    args.insert(args.end(), change.begin(), change.end());
    return whatif_json(args)["devices"][0]["predicted"]["max_allocated_bytes"].get<int64_t>();
  };
  EXPECT_EQ(peak({"--shard", "2"}), 38 * kMiB);
  EXPECT_EQ(peak({"--shard", "2:zero2"}), 36 * kMiB);
  EXPECT_EQ(peak({"--shard", "2:zero3"}), 32 * kMiB);
  EXPECT_EQ(peak({"--dtype", "activation=bf16"}), 38 * kMiB);
  EXPECT_EQ(peak({"--dtype", "activation=bf16", "--dtype", "optimizer_state=bf16"}), 30 * kMiB);

  const ProcessResult bad_shard = cli({"whatif", trace, "--shard", "1"});
  EXPECT_EQ(bad_shard.exit_code, 2);
  EXPECT_NE(bad_shard.err.find("--shard: expected N:STAGE"), std::string::npos) << bad_shard.err;
  const ProcessResult bad_dtype = cli({"whatif", trace, "--dtype", "weights=bf16"});
  EXPECT_EQ(bad_dtype.exit_code, 2);
  EXPECT_NE(bad_dtype.err.find("unknown role 'weights'"), std::string::npos) << bad_dtype.err;
  const ProcessResult no_buffer = cli({"whatif", trace, "--dtype", "buffer=bf16"});
  EXPECT_EQ(no_buffer.exit_code, 1);
  EXPECT_NE(no_buffer.err.find("--dtype: no block of the trace is buffer"), std::string::npos)
      << no_buffer.err;
}

// The stand-in's layers keep one block each for backward, which the backward releases first:
// taken as each module's output (the next module's to keep), nothing is left to checkpoint, and
// that is one line, exit 1, as for a module the trace has not.
TEST_F(WhatIf, CheckpointingAModuleWithNothingButItsOutputIsOneLine) {
  ASSERT_EQ(run_traced("workload_roles_training", {}).exit_code, 0);
  const std::string trace = only_trace();
  for (const std::string module : {"fc1", "fc3"}) {
    const ProcessResult r = cli({"whatif", trace, "--checkpoint", module});
    EXPECT_EQ(r.exit_code, 1) << module;
    EXPECT_NE(r.err.find("--checkpoint: no activation made in the forward of '" + module + "'"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// Without roles in the trace, a change by role cannot be predicted, and says so.
TEST_F(WhatIf, AChangeByRoleNeedsRoles) {
  ASSERT_EQ(run_traced("workload_cached_training", {"4"}, {{"SIM_ALLOCATOR", "pytorch"}}).exit_code,
            0);
  const std::string trace = only_trace();
  const json w = whatif_json({trace});
  EXPECT_EQ(w["roles_recorded"], false);
  const ProcessResult batch = cli({"whatif", trace, "--batch-scale", "2"});
  EXPECT_EQ(batch.exit_code, 1);
  EXPECT_NE(batch.err.find("need each block's role, and this trace has none"), std::string::npos)
      << batch.err;
  EXPECT_EQ(std::count(batch.err.begin(), batch.err.end(), '\n'), 1) << batch.err;
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
