// SPDX-License-Identifier: Apache-2.0
// `report` on the traces of a simulated distributed job (tests/workloads/job_rank.cpp, one
// process per RANK): the job view (text and `job` in JSON, and in the HTML page), the same output
// whatever the number of workers that read the traces, the same job view through summaries
// (`summarize`), the rows of `export --format jsonl`, and `check` on a job (--max-imbalance).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
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

  // `summarize` of each trace into dir_/summaries, named after it (so that they sort as the
  // traces do) but with no .gmt in the name: summaries are told by their content.
  std::string summarize_job() {
    const std::string dir = dir_ + "/summaries";
    std::filesystem::create_directory(dir);
    for (const std::string& trace : traces()) {
      const std::string name = std::filesystem::path(trace).stem().string() + ".summary";
      const ProcessResult r = cli({"summarize", trace, "-o", dir + "/" + name});
      EXPECT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(r.out, "");
    }
    return dir;
  }

  // The text report from the table of processes on: the run's rows and the job view.
  static std::string job_text(const std::string& report) {
    const std::size_t at = report.find("run of ");
    return at == std::string::npos ? "" : report.substr(at);
  }
};

// The function names of a frames array, leaf first.
std::vector<std::string> functions(const json& frames) {
  std::vector<std::string> names;
  for (const json& f : frames) names.push_back(f["function"].get<std::string>());
  return names;
}

// A site's one-line name by the rule every command names sites by (commands.md, "Site names"),
// for a site alone among its rows: its first user frame's `file:line`.
std::string user_line(const json& frames) {
  for (const json& f : frames) {
    if (f["user"] == true) {
      const std::string file = f["file"];
      return file.substr(file.rfind('/') + 1) + ":" + std::to_string(f["line"].get<int>());
    }
  }
  return "";
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
  // Sites named in one line, as everywhere: `job_rank.cpp:41`.
  const json job = report({dir_})["job"];
  const std::string oom_site = user_line(job["first_oom"]["frames"]);
  EXPECT_EQ(job["first_oom"]["site"], oom_site);
  EXPECT_NE(r.out.find(" device 0: 1.00 TiB asked in " + oom_site + "\n"), std::string::npos)
      << r.out;
  const std::string one_site = user_line(job["leak_sites"][0]["frames"]);
  const std::string all_site = user_line(job["leak_sites"][1]["frames"]);
  EXPECT_EQ(one_site.rfind("job_rank.cpp:", 0), 0u) << one_site;
  EXPECT_NE(one_site, all_site);
  EXPECT_EQ(job["leak_sites"][0]["site"], one_site);
  EXPECT_EQ(job["leak_sites"][1]["site"], all_site);
  const std::size_t one = r.out.find("    " + one_site + " \u2014 ");
  const std::size_t all = r.out.find("    " + all_site + " \u2014 ");
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

TEST_F(JobReport, HtmlSameWhateverTheNumberOfWorkersWithTheJobView) {
  ASSERT_NO_FATAL_FAILURE(run_job());
  const std::string one = dir_ + "/one.html", four = dir_ + "/four.html";
  const ProcessResult serial = cli({"html", dir_, "-o", one, "--jobs", "1"});
  const ProcessResult parallel = cli({"html", dir_, "-o", four, "--jobs", "4"});
  ASSERT_EQ(serial.exit_code, 0) << serial.err;
  ASSERT_EQ(parallel.exit_code, 0) << parallel.err;
  const std::string page = read_file(one);
  EXPECT_GT(page.size(), 10000u);
  EXPECT_EQ(page, read_file(four));

  // The page's data holds the report's job view, as `report --json` has it.
  const std::string open = "<script type=\"application/json\" id=\"gmt-data\">";
  const std::size_t start = page.find(open);
  ASSERT_NE(start, std::string::npos);
  const std::size_t end = page.find("</script>", start);
  const json data = json::parse(page.substr(start + open.size(), end - start - open.size()));
  EXPECT_EQ(data["job"], report({dir_})["job"]);
  EXPECT_EQ(data["job"]["highest_peak"]["rank"], 2);
}

TEST_F(JobReport, SummariesGiveTheSameJobView) {
  ASSERT_NO_FATAL_FAILURE(run_job());
  const std::string summaries = summarize_job();
  const std::vector<std::string> files = {
      summaries + "/" + std::filesystem::path(traces()[0]).stem().string() + ".summary"};
  const std::string text = read_file(files[0]);
  // "format" first, then "version": how a directory's summaries are told from other files.
  EXPECT_EQ(text.rfind("{\"format\":\"gpumemtrace-summary\",\"version\":\"1.3\",", 0), 0u)
      << text.substr(0, 100);
  const json first = json::parse(text);
  EXPECT_EQ(first["format"], "gpumemtrace-summary");
  EXPECT_EQ(first["version"], "1.3");
  EXPECT_EQ(first["trace"]["rank"], 0);
  EXPECT_EQ(first["trace"]["path"], traces()[0]);

  // JSON: the same job object, and the same traces' paths, ranks and devices.
  const json from_traces = report({dir_});
  const json from_summaries = report({summaries});
  EXPECT_EQ(from_summaries["job"], from_traces["job"]);
  ASSERT_EQ(from_summaries["traces"].size(), 4u);
  for (int i = 0; i < 4; ++i) {
    for (const char* key : {"path", "pid", "rank", "events", "end", "argv", "host"})
      EXPECT_EQ(from_summaries["traces"][i][key], from_traces["traces"][i][key]) << key;
  }
  EXPECT_EQ(from_summaries["leaks"], from_traces["leaks"]);
  EXPECT_EQ(from_summaries["ooms"].size(), from_traces["ooms"].size());

  // Text: the table of processes and the job view, the same to the byte.
  const ProcessResult text_traces = cli({"report", dir_});
  const ProcessResult text_summaries = cli({"report", summaries});
  ASSERT_EQ(text_traces.exit_code, 0) << text_traces.err;
  ASSERT_EQ(text_summaries.exit_code, 0) << text_summaries.err;
  EXPECT_NE(job_text(text_traces.out).find("highest peak"), std::string::npos);
  EXPECT_EQ(job_text(text_summaries.out), job_text(text_traces.out));

  // Summaries and traces mixed, named as files: the same job.
  const std::vector<std::string> all = traces();
  std::vector<std::string> mixed = {"report", "--json"};
  for (int i = 0; i < 4; ++i) {
    mixed.push_back(i % 2 == 0 ? all[i]
                               : summaries + "/" + std::filesystem::path(all[i]).stem().string() +
                                     ".summary");
  }
  const ProcessResult r = cli(mixed);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["job"], from_traces["job"]);

  // html needs the records: it names the summary and makes no page.
  const ProcessResult html = cli({"html", files[0], "-o", dir_ + "/s.html"});
  EXPECT_EQ(html.exit_code, 1);
  EXPECT_EQ(html.err, "gpumemtrace: " + files[0] +
                          " is a summary: html needs the trace itself (report reads summaries)\n");
  // A directory of them: said once, not once per summary.
  const ProcessResult html_dir = cli({"html", summaries, "-o", dir_ + "/s.html"});
  EXPECT_EQ(html_dir.exit_code, 1);
  std::vector<std::string> in_dir;
  for (const std::string& trace : traces())
    in_dir.push_back(summaries + "/" + std::filesystem::path(trace).stem().string() + ".summary");
  std::sort(in_dir.begin(), in_dir.end());
  EXPECT_EQ(html_dir.err, "gpumemtrace: 4 of the 4 inputs are summaries (" + in_dir.front() +
                              " ... " + in_dir.back() +
                              "): html needs the traces themselves (report reads summaries)\n");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/s.html"));
}

TEST_F(JobReport, DamagedOrNewerSummariesAreNamed) {
  ASSERT_NO_FATAL_FAILURE(run_job());
  const std::string summaries = summarize_job();
  const std::string path =
      summaries + "/" + std::filesystem::path(traces()[1]).stem().string() + ".summary";
  const std::string text = read_file(path);

  // A newer major version: refused, with the file and the versions named.
  const std::string newer = dir_ + "/newer.summary";
  {
    json j = json::parse(text);
    j["version"] = "2.0";
    std::ofstream(newer) << j.dump();
  }
  ProcessResult r = cli({"report", newer});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "gpumemtrace: " + newer +
                       ": not a readable gpumemtrace summary: version 2.0 is newer than this "
                       "gpumemtrace reads (1.x): summarize the trace again with this version\n");
  // A newer minor version is read (its added fields are not needed).
  {
    json j = json::parse(text);
    j["version"] = "1.7";
    j["added_later"] = 1;
    std::ofstream(newer) << j.dump();
  }
  r = cli({"report", newer});
  EXPECT_EQ(r.exit_code, 0) << r.err;

  // Cut in half, in a directory of summaries: named, and the others still reported.
  std::ofstream(path, std::ios::trunc) << text.substr(0, text.size() / 2);
  r = cli({"report", "--json", summaries});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind(
                "gpumemtrace: " + path + ": not a readable gpumemtrace summary: damaged JSON: ", 0),
            0u)
      << r.err;
  EXPECT_EQ(json::parse(r.out)["traces"].size(), 3u);

  // A field missing: named.
  {
    json j = json::parse(text);
    j["trace"].erase("pid");
    std::ofstream(path, std::ios::trunc) << j.dump();
  }
  r = cli({"check", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "gpumemtrace: " + path + ": not a readable gpumemtrace summary: no \"pid\" field\n");

  // Numbers out of their field's range are named, never read as another number: a negative
  // peak (was 16.0 EiB), a fraction for bytes (1e300 was 0 B), a device past any ordinal (2^40
  // was device 0).
  const std::vector<std::tuple<std::string, json, std::string>> damaged = {
      {"peak_bytes", -5,
       "\"peak_bytes\": expected a whole number from 0 to 18446744073709551615, "
       "got -5"},
      {"peak_bytes", 1e300,
       "\"peak_bytes\": expected a whole number from 0 to "
       "18446744073709551615, got 1e+300"},
      {"device", 1ull << 40,
       "\"device\": expected a whole number from -2147483648 to 2147483647, "
       "got 1099511627776"},
  };
  for (const auto& [field, value, why] : damaged) {
    json j = json::parse(text);
    j["devices"][0][field] = value;
    std::ofstream(path, std::ios::trunc) << j.dump();
    r = cli({"report", path});
    EXPECT_EQ(r.exit_code, 1) << field;
    EXPECT_EQ(r.err,
              "gpumemtrace: " + path + ": not a readable gpumemtrace summary: " + why + "\n");
  }
}

TEST_F(JobReport, JsonlRowsPerRankDeviceAndSite) {
  ASSERT_NO_FATAL_FAILURE(run_job());
  const ProcessResult r = cli({"export", dir_, "--format", "jsonl", "-o", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<json> rows;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) rows.push_back(json::parse(line));

  // Per rank: the sites at the peak (the working set, named by its allocate() frame, the leak of
  // rank 2, record_history), the leak groups, and the failed allocation of ranks 1 and 3.
  struct Row {
    int rank;
    const char* row_class;
    uint64_t bytes;
    const char* site;
  };
  const uint64_t kTiB = uint64_t{1} << 40;
  const std::vector<Row> expected = {
      {0, "peak", 16 * kMiB, "allocate"},
      {0, "peak", 4 * kMiB, "record_history"},
      {0, "unfreed", 4 * kMiB, "record_history"},
      {1, "peak", 32 * kMiB, "allocate"},
      {1, "peak", 4 * kMiB, "record_history"},
      {1, "unfreed", 4 * kMiB, "record_history"},
      {1, "failed", kTiB, "oversized_batch"},
      {2, "peak", 48 * kMiB, "allocate"},
      {2, "peak", 32 * kMiB, "leak_on_one_rank"},
      {2, "peak", 4 * kMiB, "record_history"},
      {2, "unfreed", 32 * kMiB, "leak_on_one_rank"},
      {2, "unfreed", 4 * kMiB, "record_history"},
      {3, "peak", 64 * kMiB, "allocate"},
      {3, "peak", 4 * kMiB, "record_history"},
      {3, "unfreed", 4 * kMiB, "record_history"},
      {3, "failed", kTiB, "oversized_batch"},
  };
  const uint64_t peaks[] = {20, 36, 84, 68};
  const json rep = report({dir_});
  ASSERT_EQ(rows.size(), expected.size()) << r.out;
  std::map<std::string, std::string> ids;  // site function -> site_id, the same on every rank
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const json& row = rows[i];
    const Row& e = expected[i];
    EXPECT_EQ(row["trace"], e.rank) << i;
    EXPECT_EQ(row["rank"], e.rank) << i;
    EXPECT_EQ(row["path"], traces()[e.rank]) << i;
    EXPECT_EQ(row["pid"], rep["traces"][e.rank]["pid"]) << i;
    EXPECT_EQ(row["device"], 0) << i;
    EXPECT_EQ(row["device_peak_bytes"], peaks[e.rank] * kMiB) << i;
    EXPECT_EQ(row["class"], e.row_class) << i;
    EXPECT_EQ(row["bytes"], e.bytes) << i;
    EXPECT_EQ(row["count"], 1) << i;
    EXPECT_EQ(row["allocator"], nullptr) << i;
    // Each site alone on its line: named by its first user frame, `job_rank.cpp:N`.
    const std::string site = row["site"];
    EXPECT_EQ(site, user_line(row["frames"])) << i;
    EXPECT_EQ(site.rfind("job_rank.cpp:", 0), 0u) << i << ": " << site;
    EXPECT_EQ(row["site_id"].get<std::string>().size(), 16u);
    EXPECT_TRUE(names(row["frames"], std::string(e.site) + "()") ||
                std::string(e.site) == "allocate")
        << i;
    const auto [at, added] = ids.try_emplace(e.site, row["site_id"].get<std::string>());
    EXPECT_EQ(at->second, row["site_id"].get<std::string>()) << i << ": " << e.site;
  }
  EXPECT_EQ(ids.size(), 4u);

  // The same rows, to the byte, from the summaries and from one summary file per rank.
  const std::string summaries = summarize_job();
  const ProcessResult from_summaries =
      cli({"export", summaries, "--format", "jsonl", "-o", dir_ + "/rows.jsonl"});
  ASSERT_EQ(from_summaries.exit_code, 0) << from_summaries.err;
  EXPECT_EQ(read_file(dir_ + "/rows.jsonl"), r.out);

  // Another format takes one trace.
  const ProcessResult two =
      cli({"export", traces()[0], traces()[1], "--format", "pprof", "-o", "-"});
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_EQ(two.err, "gpumemtrace: --format pprof takes one trace (jsonl takes several)\n");
}

// --no-oom on a job names the processes whose allocations failed (ranks 1 and 3).
TEST_F(JobReport, CheckNoOomNamesTheRanksThatFailed) {
  ASSERT_NO_FATAL_FAILURE(run_job());
  const json rep = report({dir_});
  const auto rank = [&](int i) {
    return "rank " + std::to_string(i) + " (pid " +
           std::to_string(rep["traces"][i]["pid"].get<uint64_t>()) + ")";
  };
  for (const std::string& job : {dir_, summarize_job()}) {
    const ProcessResult r = cli({"check", job, "--no-oom"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.out, "FAIL: 2 allocations failed, 1 on " + rank(1) + " and 1 on " + rank(3) +
                         " (--no-oom)\n");
  }
}

TEST_F(JobReport, CheckMaxImbalance) {
  ASSERT_NO_FATAL_FAILURE(run_job());
  const std::string summaries = summarize_job();
  const json rep = report({dir_});
  const std::string rank2 =
      "rank 2 (pid " + std::to_string(rep["traces"][2]["pid"].get<uint64_t>()) + ")";
  // Peaks 20, 36, 84, 68 MiB: the median 52 MiB, rank 2's 84 MiB is 1.62x it.
  for (const std::string& job : {dir_, summaries}) {
    ProcessResult r = cli({"check", job, "--max-imbalance", "1.7"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out,
              "OK: 4 processes, highest peak 84.0 MiB, never freed 48.0 MiB, 2 failed "
              "allocations, spread 1.62x between processes\n");
    r = cli({"check", job, "--max-imbalance", "1.6"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.out, "FAIL: highest peak 84.0 MiB (88080384 bytes) on " + rank2 +
                         " device 0 is 1.62x the median 52.0 MiB of 4 processes (each by its "
                         "highest device's peak), exceeds --max-imbalance 1.6\n");
    // --max-peak on every rank: the one over it named.
    r = cli({"check", job, "--max-peak", "80MiB"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "FAIL: peak 84.0 MiB (88080384 bytes) on " + rank2 +
                         " device 0 exceeds --max-peak 80.0 MiB\n");
    r = cli({"check", job, "--max-leak", "36MiB"});
    EXPECT_EQ(r.exit_code, 0) << r.out;
    r = cli({"check", job, "--max-leak", "35MiB"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out,
              "FAIL: 36.0 MiB (37748736 bytes) never freed (probable leaks and unfreed) on " +
                  rank2 + " exceeds --max-leak 35.0 MiB\n");
  }
  // One trace: its own peak is its median.
  EXPECT_EQ(cli({"check", traces()[2], "--max-imbalance", "1"}).exit_code, 0);

  // Usage errors exit 2, as every option's.
  for (const std::string bad : {"0.5", "abc", "nan", "inf", "", "1.5x", "-2"}) {
    const ProcessResult r = cli({"check", dir_, "--max-imbalance", bad});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_EQ(
        r.err.substr(0, r.err.find('\n')),
        "gpumemtrace: --max-imbalance: expected a ratio of 1 or more (1.5), got '" + bad + "'")
        << r.err;
    EXPECT_EQ(r.out, "");
  }
}

// --max-imbalance compares the processes (the ranks), each by its highest device's peak, unless
// asked to compare every device, and says which: one process whose two devices differ is one
// rank, balanced with itself.
TEST_F(JobReport, CheckMaxImbalanceComparesProcessesUnlessAskedPerDevice) {
  ASSERT_EQ(run_traced("workload_runtime_shared",
                       {"alloc:a:" + mib(64), "device:1", "alloc:b:" + mib(4), "free:b", "device:0",
                        "free:a"},
                       {{"FAKECUDA_DEVICE_COUNT", "2"}})
                .exit_code,
            0);
  const std::string trace = only_trace();
  const std::string pid = std::to_string(report({trace})["traces"][0]["pid"].get<uint64_t>());
  ProcessResult r = cli({"check", trace, "--max-imbalance", "1.5"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "OK: peak 64.0 MiB, never freed 0 B, 0 failed allocations\n");
  r = cli({"check", trace, "--max-imbalance", "1.5", "--imbalance-per", "process"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  // Per device: 64 MiB against the median of 64 and 4 MiB, 34 MiB.
  r = cli({"check", trace, "--max-imbalance", "1.5", "--imbalance-per", "device"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "FAIL: highest peak 64.0 MiB (67108864 bytes) on pid " + pid +
                       " device 0 is 1.88x the median 34.0 MiB of 2 devices (--imbalance-per "
                       "device: every device of every process), exceeds --max-imbalance 1.5\n");
  r = cli({"check", trace, "--max-imbalance", "2", "--imbalance-per", "device"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out,
            "OK: peak 64.0 MiB, never freed 0 B, 0 failed allocations, spread 1.88x "
            "between devices\n");
  r = cli({"check", trace, "--max-imbalance", "2", "--imbalance-per", "rank"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')),
            "gpumemtrace: --imbalance-per: expected process or device, got 'rank'");
}

// A trace and its own summary, given together or in one directory, are one process: counted
// once (the trace kept), and said so.
TEST_F(JobReport, ATraceAndItsSummaryCountOnce) {
  ASSERT_EQ(run_traced("job_rank", {}, {{"RANK", "0"}}).exit_code, 0);
  const std::string trace = only_trace();
  const std::string summary = dir_ + "/s.json";
  ASSERT_EQ(cli({"summarize", trace, "-o", summary}).exit_code, 0);
  const json alone = report({trace});
  const std::string pid = std::to_string(alone["traces"][0]["pid"].get<uint64_t>());
  const std::string said = "gpumemtrace: the summary " + summary +
                           " is the same process as the trace " + trace + " (pid " + pid +
                           ", started at the same moment): counted once, from the trace\n";
  for (const std::vector<std::string>& inputs :
       {std::vector<std::string>{summary, trace}, {trace, summary}, {dir_}}) {
    std::vector<std::string> args = {"report", "--json"};
    args.insert(args.end(), inputs.begin(), inputs.end());
    ProcessResult r = cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, said);
    const json both = json::parse(r.out);
    ASSERT_EQ(both["traces"].size(), 1u) << both["traces"].dump(1);
    EXPECT_EQ(both["traces"][0]["path"], trace);
    EXPECT_EQ(both["devices"], alone["devices"]);
    EXPECT_FALSE(both.contains("job"));
    // check's totals are one process's too.
    args[1] = "--max-leak";
    args.insert(args.begin() + 2, "1GiB");
    args[0] = "check";
    r = cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.out.rfind("OK: peak 20.0 MiB, never freed 4.00 MiB", 0), 0u) << r.out;
  }
}

}  // namespace
}  // namespace gmt::test
