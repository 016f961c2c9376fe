// SPDX-License-Identifier: Apache-2.0
// How many more tokens a decode loop fits, by the allocator's model: generate() of a decoder
// whose key-value cache grows by concatenation, behind the simulated allocator that reports its
// blocks as PyTorch's trace tracker does (tests/workloads/decode_loop.cpp), traced for 64
// tokens; the figure is checked against the same loop run on until a request fails.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

constexpr uint64_t kDecodeMiB = 1 << 20;

class DecodeAhead : public TracedRun {
 protected:
  json report_json() const {
    const ProcessResult r = cli({"report", "--json", only_trace()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json::object();
  }

  // The tokens the loop generates after a 600-token prompt before a request fails, untraced,
  // on a device of `memory` bytes with 32 MiB held by the context.
  uint64_t generated_until_full(uint64_t memory) const {
    const ProcessResult run = run_untraced("workload_decode_loop", {"600", "max"},
                                           {{"FAKECUDA_DEVICE_MEMORY", std::to_string(memory)},
                                            {"FAKECUDA_CONTEXT_OVERHEAD", "33554432"}});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(run.out.rfind("generated ", 0), 0u) << run.out;
    return std::strtoull(run.out.c_str() + 10, nullptr, 10);
  }

  // The last failure `oom --json` names that the allocator reported (a failed cudaMalloc it
  // retried after releasing its cache is another); null when none.
  json allocator_failure() const {
    const ProcessResult oom = cli({"oom", "--json", only_trace()});
    EXPECT_EQ(oom.exit_code, 0) << oom.err;
    const json ooms = json::parse(oom.out)["ooms"];
    json found;
    for (const json& o : ooms) {
      if (o.contains("allocator")) found = o;
    }
    EXPECT_FALSE(found.is_null()) << oom.out;
    return found;
  }

  // The loop traced with `args`, on a device of `memory` bytes with 32 MiB held by the context.
  ProcessResult traced_loop(std::vector<std::string> args,
                            uint64_t memory = 160 * kDecodeMiB) const {
    return run_traced("workload_decode_loop", std::move(args),
                      {{"FAKECUDA_DEVICE_MEMORY", std::to_string(memory)},
                       {"FAKECUDA_CONTEXT_OVERHEAD", "33554432"}});
  }

  json inference_after_64(uint64_t memory) {
    const ProcessResult run = traced_loop({"600", "64"}, memory);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(run.out, "generated 64\n");
    return report_json()["devices"][0]["inference"];
  }
};

// On 160 MiB less the 32 MiB context the allocator could hold 128 MiB; it held 44 MiB at the
// last step's end, and 2 % of the 84 MiB it could take beside them is kept free.
// The model runs the last of the 63 decode steps forward (19 requests a step: per layer its
// keys and values anew, its scores and output; the hidden state, the logits, the ids) until a
// layer's keys of 10 MiB fail; the loop itself, on a device smaller by what the figure keeps
// free, generates exactly that many more tokens before it runs out.
TEST_F(DecodeAhead, TheTokensThatFitAreThoseTheLoopGenerates) {
  const uint64_t memory = 160 * kDecodeMiB;
  const json inference = inference_after_64(memory);
  ASSERT_EQ(inference["tokens_that_fit_by"], "allocator_model") << inference;
  const json& m = inference["modelled"];
  EXPECT_EQ(m["steps"], 63);
  EXPECT_EQ(m["tokens_per_step"], 1);
  EXPECT_EQ(m["requests_per_step"], 19);
  EXPECT_EQ(m["capacity_bytes"], 128 * kDecodeMiB);
  // 2 % of what the allocator could take beside what it held at the last step's end.
  EXPECT_EQ(m["reserved_bytes"], 44 * kDecodeMiB);
  EXPECT_EQ(m["kept_free_bytes"], 84 * kDecodeMiB / 100 * 2);
  // 600 + 64 - 1 cached, and the failing step's keys: 4 sequences x 4 heads x 64 x 2 bytes a
  // token, rounded to 2 MiB for a segment of their own.
  EXPECT_EQ(inference["tokens"], 663);
  const uint64_t tokens = inference["tokens_that_fit"].get<uint64_t>();
  EXPECT_EQ(m["failed_request_bytes"], (663 + tokens + 1) * 2048) << inference;
  EXPECT_EQ(generated_until_full(memory - m["kept_free_bytes"].get<uint64_t>()), 64 + tokens);
  EXPECT_EQ(inference["not_modelled"], nullptr);

  const ProcessResult text = cli({"report", only_trace()});
  EXPECT_NE(
      text.out.find("      " + std::to_string(tokens) + " more tokens per sequence fit (or about "),
      std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("the last decode step run forward through the allocator's model, "
                          "each request grown as it grew the step before, until a request of "
                          "10.0 MiB failed, with 1.68 MiB kept free of the 84.0 MiB the allocator "
                          "could take beside its 44.0 MiB"),
            std::string::npos)
      << text.out;
}

// A smaller device: the keys stop fitting before they need segments of their own, and the
// freed keys, one token too short, are what the cache holds. The estimate from the free bytes
// says more than fit; the model says what the loop generates.
TEST_F(DecodeAhead, FragmentationIsCounted) {
  const uint64_t memory = 120 * kDecodeMiB;
  const json inference = inference_after_64(memory);
  ASSERT_EQ(inference["tokens_that_fit_by"], "allocator_model") << inference;
  const uint64_t tokens = inference["tokens_that_fit"].get<uint64_t>();
  const uint64_t kept = inference["modelled"]["kept_free_bytes"].get<uint64_t>();
  EXPECT_EQ(generated_until_full(memory - kept), 64 + tokens);
  EXPECT_GT(inference["estimated_tokens_that_fit"].get<uint64_t>(), tokens + 100) << inference;
}

// Fewer than three decode steps: nothing to take the growth from; the estimate stands, and
// says why.
TEST_F(DecodeAhead, TooFewStepsKeepTheEstimate) {
  const ProcessResult run = traced_loop({"600", "3"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json report = report_json();
  const json& inference = report["devices"][0]["inference"];
  EXPECT_EQ(inference["tokens_that_fit_by"], "estimate") << inference;
  EXPECT_EQ(inference["modelled"], nullptr);
  EXPECT_EQ(inference["not_modelled"], "fewer than three decode steps");
  EXPECT_EQ(inference["tokens_that_fit"], inference["estimated_tokens_that_fit"]);
  const ProcessResult text = cli({"report", only_trace()});
  EXPECT_NE(text.out.find("(an estimate: the decode loop was not run forward through the "
                          "allocator's model: fewer than three decode steps)"),
            std::string::npos)
      << text.out;
}

// The loop run on until a request fails, traced: at the failure, and at exit with the cache as
// long as then, no more tokens fit, whatever the free bytes say (the cache held 41.8 MiB free, in
// pieces a step's 10 MiB keys did not fit in; the estimate from the free bytes said 2,037 more);
// earlier in the loop, as many as it went on to make.
TEST_F(DecodeAhead, AtALoopThatRanOutNoMoreFit) {
  const ProcessResult run = traced_loop({"64", "max"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "generated 5057\n");
  const json failure = allocator_failure();
  const json& then = failure["inference"];
  EXPECT_EQ(then["tokens"], 64 + 5057 - 1);
  EXPECT_EQ(then["tokens_that_fit"], 0) << then;
  EXPECT_EQ(then["sequences_that_fit"], 0);
  EXPECT_EQ(then["tokens_that_fit_by"], "failure");
  // A layer's keys one token longer than the cache: 4 sequences x 4 heads x 64 x 2 bytes a token.
  EXPECT_EQ(then["ran_out_request_bytes"], (64 + 5057 - 1 + 1) * 2048);
  EXPECT_EQ(failure["allocator_requested_bytes"], then["ran_out_request_bytes"]);

  EXPECT_EQ(then["ran_out_tokens"], 5120);

  // At the peak, earlier in the same loop: as many more as the loop went on to make there (the
  // estimate from the free bytes said 1,469).
  const ProcessResult peak = cli({"peak", "--json", only_trace()});
  ASSERT_EQ(peak.exit_code, 0) << peak.err;
  const json at_peak = json::parse(peak.out)["devices"][0]["inference"];
  const uint64_t peak_tokens = at_peak["tokens"].get<uint64_t>();
  EXPECT_LT(peak_tokens, 5120u) << at_peak;
  EXPECT_EQ(at_peak["tokens_that_fit"], 5120 - peak_tokens) << at_peak;
  EXPECT_EQ(at_peak["tokens_that_fit_by"], "failure");
  EXPECT_EQ(at_peak["ran_out_tokens"], 5120);
  EXPECT_EQ(at_peak["sequences_that_fit"], nullptr);
  const ProcessResult peak_text = cli({"peak", only_trace()});
  EXPECT_NE(peak_text.out.find(std::to_string(5120 - peak_tokens) +
                               " more tokens per sequence fit: the decode loop went on to 5120 "
                               "tokens per sequence and ran out of memory there"),
            std::string::npos)
      << peak_text.out;

  const json at_exit = report_json()["devices"][0]["inference"];
  EXPECT_EQ(at_exit["tokens_that_fit"], 0) << at_exit;
  EXPECT_EQ(at_exit["tokens_that_fit_by"], "failure");
  EXPECT_EQ(at_exit["ran_out_request_bytes"], then["ran_out_request_bytes"]);
  EXPECT_EQ(at_exit["not_modelled"], nullptr);
  const ProcessResult text = cli({"report", only_trace()});
  EXPECT_NE(text.out.find("no more tokens or sequences fit: the decode step at 5120 tokens per "
                          "sequence ran out of memory (a request of 10.0 MiB failed)"),
            std::string::npos)
      << text.out;
}

// The decoder's next forward with autograd on (a training step, not a decode step) fails after
// the loop: no decode step ran out there, and the figures at the failure and at exit are the
// estimate and the allocator's model as without it.
TEST_F(DecodeAhead, AFailureOutsideTheDecodeLoopIsNoDecodeStepRunningOut) {
  const ProcessResult run = traced_loop({"600", "64", "train"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "train failed\ngenerated 64\n");
  const json failure = allocator_failure();
  EXPECT_EQ(failure["allocator_requested_bytes"], uint64_t{64} << 30);
  const json& then = failure["inference"];
  EXPECT_EQ(then["tokens_that_fit_by"], "estimate") << then;
  EXPECT_EQ(then["ran_out_tokens"], nullptr);
  const json at_exit = report_json()["devices"][0]["inference"];
  EXPECT_NE(at_exit["tokens_that_fit_by"], "failure") << at_exit;
  EXPECT_EQ(at_exit["ran_out_tokens"], nullptr);

  // The forward went on after its failure, inside the model, as a library that tries another
  // way does: on a device where the request fits, whatif still gives its verdict.
  const ProcessResult larger = cli({"whatif", only_trace(), "--device-memory", "80GiB", "--json"});
  ASSERT_EQ(larger.exit_code, 0) << larger.err;
  const json predicted = json::parse(larger.out)["devices"][0]["predicted"];
  EXPECT_EQ(predicted["recorded_failures_served"], 1) << predicted;
  EXPECT_EQ(predicted["requests_after_served_failure"], 0);
  EXPECT_EQ(predicted["fits"], true);
}

// A peak late in the loop, before its end: what the loop went on to make up to its end, and the
// model's figure from there (the free-bytes estimate at the peak said 4,869).
TEST_F(DecodeAhead, APeakInTheLoopCountsWhatTheLoopWentOnToMake) {
  const ProcessResult run = traced_loop({"64", "2000"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json at_exit = report_json()["devices"][0]["inference"];
  ASSERT_EQ(at_exit["tokens_that_fit_by"], "allocator_model") << at_exit;
  const ProcessResult peak = cli({"peak", "--json", only_trace()});
  ASSERT_EQ(peak.exit_code, 0) << peak.err;
  const json at_peak = json::parse(peak.out)["devices"][0]["inference"];
  const uint64_t peak_tokens = at_peak["tokens"].get<uint64_t>();
  const uint64_t end_tokens = at_exit["tokens"].get<uint64_t>();
  ASSERT_LT(peak_tokens, end_tokens) << at_peak;
  EXPECT_EQ(at_peak["tokens_that_fit_by"], "allocator_model");
  EXPECT_EQ(at_peak["tokens_that_fit"],
            end_tokens - peak_tokens + at_exit["tokens_that_fit"].get<uint64_t>());
  EXPECT_EQ(at_peak["modelled"], at_exit["modelled"]);
  const ProcessResult text = cli({"peak", only_trace()});
  EXPECT_NE(text.out.find("the decode loop went on to " + std::to_string(end_tokens) +
                          " tokens per sequence, then the last decode step run forward"),
            std::string::npos)
      << text.out;
}

// A summary (`summarize`) keeps what tokens that fit are worked out from: `report` of it gives the
// trace's figures to the token, at exit and at each failure, for a loop the allocator's model ran
// on and for one that ran out.
TEST_F(DecodeAhead, ASummaryGivesTheTracesFigures) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"600", "64"}, std::vector<std::string>{"64", "max"}}) {
    SCOPED_TRACE(args[1]);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    const ProcessResult run = traced_loop(args);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const std::string summary = dir_ + "/summary.json";
    ASSERT_EQ(cli({"summarize", only_trace(), "-o", summary}).exit_code, 0);
    const ProcessResult from_summary = cli({"report", "--json", summary});
    ASSERT_EQ(from_summary.exit_code, 0) << from_summary.err;
    const json s = json::parse(from_summary.out);
    const json t = report_json();
    const json& inference = t["devices"][0]["inference"];
    ASSERT_TRUE(inference["tokens_that_fit"].is_number()) << inference;
    EXPECT_EQ(inference["tokens_that_fit_by"], args[1] == "max" ? "failure" : "allocator_model");
    EXPECT_EQ(s["devices"][0]["inference"], inference);
    // The failures as the trace gives them: the driver's free bytes, the allocator's request
    // and its cache then.
    EXPECT_EQ(s["ooms"], t["ooms"]);
    if (args[1] == "max") {
      ASSERT_EQ(t["ooms"].size(), 2u);
      EXPECT_EQ(t["ooms"][1]["fragmentation"], true);
      EXPECT_TRUE(t["ooms"][1]["driver_free_bytes"].is_number()) << t["ooms"][1];
    }
  }
}

}  // namespace
}  // namespace gmt::test
