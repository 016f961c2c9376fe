// SPDX-License-Identifier: Apache-2.0
// `report` on the traces of a simulated distributed job (tests/workloads/job_rank.cpp, one
// process per RANK): the job view (text and `job` in JSON), and the same output whatever the
// number of workers that read the traces.
#include <string>
#include <vector>

#include "tests/integration/traced_run_fixture.h"

namespace gmt::test {
namespace {

using json = nlohmann::json;

class JobReport : public TracedRun {
 protected:
  // Ranks 3, 2, 1, 0 in that order (so the first failure in time is not the first in the
  // traces' name order): rank 2 leaks 32 MiB more, ranks 3 and 1 fail an allocation of 1 TiB.
  // Peaks: 4 + (RANK + 1) * 16 MiB, + 32 MiB on rank 2: 20, 36, 84, 68 MiB.
  void run_job() {
    for (int rank = 3; rank >= 0; --rank) {
      const ProcessResult r = run_traced(
          "job_rank", {"leak=2", "oom=3", "oom=1"},
          {{"RANK", std::to_string(rank)}, {"GPUMEMTRACE_OUTPUT", dir_ + "/rank%r-%p.gmt"}});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    ASSERT_EQ(traces().size(), 4u);
  }
};

// The function names of a frames array, leaf first.
std::vector<std::string> functions(const json& frames) {
  std::vector<std::string> names;
  for (const json& f : frames) names.push_back(f["function"].get<std::string>());
  return names;
}

// Whether a frame of `frames` is `function` (demangled: "record_history()").
bool names(const json& frames, const std::string& function) {
  for (const std::string& name : functions(frames))
    if (name == function) return true;
  return false;
}

TEST_F(JobReport, JsonJobView) {
  ASSERT_NO_FATAL_FAILURE(run_job());
  const json rep = report({dir_});
  ASSERT_EQ(rep["traces"].size(), 4u);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(rep["traces"][i]["rank"], i);  // rank%r names
  ASSERT_TRUE(rep.contains("job"));
  const json& job = rep["job"];
  EXPECT_EQ(job["processes"], 4);

  ASSERT_EQ(job["devices"].size(), 4u);
  const uint64_t peaks[] = {20, 36, 84, 68};
  const uint64_t leaked[] = {4, 4, 36, 4};
  const int failed[] = {0, 1, 0, 1};
  for (int i = 0; i < 4; ++i) {
    const json& row = job["devices"][i];
    EXPECT_EQ(row["trace"], i);
    EXPECT_EQ(row["rank"], i);
    EXPECT_EQ(row["pid"], rep["traces"][i]["pid"]);
    EXPECT_EQ(row["device"], 0);
    EXPECT_EQ(row["peak_bytes"], peaks[i] * kMiB) << i;
    EXPECT_EQ(row["leaked_bytes"], leaked[i] * kMiB) << i;
    EXPECT_EQ(row["failed_alloc_count"], failed[i]) << i;
  }

  // Median of 20, 36, 68, 84 MiB: 52 MiB; the highest, rank 2, 32 MiB over it.
  EXPECT_EQ(job["median_peak_bytes"], 52 * kMiB);
  EXPECT_EQ(job["highest_peak"]["rank"], 2);
  EXPECT_EQ(job["highest_peak"]["trace"], 2);
  EXPECT_EQ(job["highest_peak"]["peak_bytes"], 84 * kMiB);
  EXPECT_EQ(job["highest_peak"]["excess_over_median_bytes"], 32 * kMiB);
  EXPECT_DOUBLE_EQ(job["spread"].get<double>(), 84.0 / 52.0);

  // One row per site, whatever the rank: the one-rank leak (32 MiB) before the one of every
  // rank (4 x 4 MiB).
  ASSERT_EQ(job["leak_sites"].size(), 2u) << job["leak_sites"].dump(1);
  const json& one = job["leak_sites"][0];
  EXPECT_TRUE(names(one["frames"], "leak_on_one_rank()")) << one["frames"].dump();
  EXPECT_EQ(one["processes"], 1);
  EXPECT_EQ(one["traces"], json::array({2}));
  EXPECT_EQ(one["bytes"], 32 * kMiB);
  const json& all = job["leak_sites"][1];
  EXPECT_TRUE(names(all["frames"], "record_history()")) << all["frames"].dump();
  EXPECT_EQ(all["processes"], 4);
  EXPECT_EQ(all["traces"], json::array({0, 1, 2, 3}));
  EXPECT_EQ(all["bytes"], 16 * kMiB);
  EXPECT_EQ(all["min_bytes"], 4 * kMiB);
  EXPECT_EQ(all["max_bytes"], 4 * kMiB);
  EXPECT_EQ(job["leak_sites_not_listed"], 0);

  // Rank 3 ran first: its failure is the job's first, though rank 1's trace comes first.
  const json& oom = job["first_oom"];
  ASSERT_TRUE(oom.is_object());
  EXPECT_EQ(oom["rank"], 3);
  EXPECT_EQ(oom["trace"], 3);
  EXPECT_EQ(oom["requested_bytes"], uint64_t{1} << 40);
  EXPECT_TRUE(names(oom["frames"], "oversized_batch()")) << oom["frames"].dump();
  EXPECT_EQ(oom["time_ns"], rep["ooms"][1]["time_ns"]);  // ooms[]: rank 1's, then rank 3's
  EXPECT_GT(oom["wall_time_ns"].get<uint64_t>(), oom["time_ns"].get<uint64_t>());
}

TEST_F(JobReport, TextJobView) {
  ASSERT_NO_FATAL_FAILURE(run_job());
  const ProcessResult r = cli({"report", dir_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("run of 4 processes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  highest peak  84.0 MiB on rank 2 (pid "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" device 0: 32.0 MiB over the median 52.0 MiB, spread 1.62x\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  first OOM     "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" on rank 3 (pid "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" device 0: 1.00 TiB asked in oversized_batch() job_rank.cpp:"),
            std::string::npos)
      << r.out;
  const std::size_t one = r.out.find("    leak_on_one_rank() job_rank.cpp:");
  const std::size_t all = r.out.find("    record_history() job_rank.cpp:");
  ASSERT_NE(one, std::string::npos) << r.out;
  ASSERT_NE(all, std::string::npos) << r.out;
  EXPECT_LT(one, all);
  EXPECT_NE(r.out.find(" \u2014 1 of 4 processes, 32.0 MiB each\n", one), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(" \u2014 4 of 4 processes, 4.00 MiB each\n", all), std::string::npos)
      << r.out;
}

TEST_F(JobReport, OneTraceHasNoJobView) {
  ASSERT_EQ(run_traced("job_rank", {"oom=0"}, {{"RANK", "0"}}).exit_code, 0);
  const json rep = report({only_trace()});
  EXPECT_FALSE(rep.contains("job"));
  const ProcessResult r = cli({"report", only_trace()});
  EXPECT_EQ(r.out.find("highest peak"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("first OOM"), std::string::npos) << r.out;
}

TEST_F(JobReport, SameOutputWhateverTheNumberOfWorkers) {
  ASSERT_NO_FATAL_FAILURE(run_job());
  for (const bool as_json : {true, false}) {
    std::vector<std::string> args = {"report", dir_};
    if (as_json) args.insert(args.begin() + 1, "--json");
    std::vector<std::string> one = args, four = args;
    one.insert(one.end(), {"--jobs", "1"});
    four.insert(four.end(), {"--jobs", "4"});
    const ProcessResult serial = cli(one);
    const ProcessResult parallel = cli(four);
    const ProcessResult by_env = cli(args, {{"GPUMEMTRACE_JOBS", "3"}});
    ASSERT_EQ(serial.exit_code, 0) << serial.err;
    ASSERT_EQ(parallel.exit_code, 0) << parallel.err;
    ASSERT_EQ(by_env.exit_code, 0) << by_env.err;
    EXPECT_GT(serial.out.size(), 1000u);
    EXPECT_EQ(serial.out, parallel.out);
    EXPECT_EQ(serial.out, by_env.out);
  }
  const ProcessResult bad = cli({"report", dir_}, {{"GPUMEMTRACE_JOBS", "none"}});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("GPUMEMTRACE_JOBS"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace gmt::test
