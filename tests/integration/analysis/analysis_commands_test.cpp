// SPDX-License-Identifier: Apache-2.0
// Every analysis command's figures on a traced workload, cross-checked against a brute-force
// recount of the records that `gpumemtrace dump` prints.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

class AnalysisCommands : public TracedRun {
 protected:
  json command_json(std::vector<std::string> args) const {
    const ProcessResult r = cli(std::move(args));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  }
};

// Brute force: replays the dump's alloc, free, context_destroyed and alloc_failed lines with a
// plain map, device memory only (all the workload makes).
struct Recount {
  uint64_t peak = 0;
  uint64_t live = 0;
  uint64_t allocs = 0;
  uint64_t failed = 0;
};

Recount recount(const std::string& dump) {
  struct Live {
    uint64_t size;
    uint64_t context;
  };
  std::map<uint64_t, Live> live;
  Recount r;
  std::istringstream lines(dump);
  for (std::string line; std::getline(lines, line);) {
    const json record = json::parse(line);
    const std::string type = record["record"];
    if (type == "alloc") {
      EXPECT_EQ(record["kind"], "device");
      live[record["address"]] = {record["size"], record["context"]};
      r.live += record["size"].get<uint64_t>();
      ++r.allocs;
    } else if (type == "free") {
      if (auto it = live.find(record["address"]); it != live.end()) {
        r.live -= it->second.size;
        live.erase(it);
      }
    } else if (type == "context_destroyed") {
      for (auto it = live.begin(); it != live.end();) {
        if (it->second.context == record["id"]) {
          r.live -= it->second.size;
          it = live.erase(it);
        } else {
          ++it;
        }
      }
    } else if (type == "alloc_failed") {
      ++r.failed;
    }
    r.peak = std::max(r.peak, r.live);
  }
  return r;
}

TEST_F(AnalysisCommands, EveryFigureReconcilesWithTheRecords) {
  const ProcessResult run =
      run_traced("workload_runtime_shared",
                 {"alloc:a:" + mib(1), "alloc:b:" + mib(4), "free:a", "alloc:c:" + mib(2),
                  "oom:" + mib(64 * 1024), "alloc:d:" + mib(8), "alloc:e:" + mib(3), "free:b",
                  "free:d", "threads:3:20:65536", "oom:" + mib(32 * 1024), "alloc:f:" + mib(5)});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  const ProcessResult dumped = cli({"dump", trace});
  ASSERT_EQ(dumped.exit_code, 0) << dumped.err;
  const Recount expected = recount(dumped.out);
  ASSERT_EQ(expected.failed, 2u);
  ASSERT_GT(expected.peak, 0u);

  // peak: the groups, with the "other" row --top 2 makes, add up to the peak, bytes and count.
  for (const std::string by : {"stack", "library"}) {
    const json peak = command_json({"peak", trace, "--json", "--top", "2", "--by", by});
    ASSERT_EQ(peak["devices"].size(), 1u);
    const json& d = peak["devices"][0];
    EXPECT_EQ(d["peak_bytes"], expected.peak);
    uint64_t bytes = 0;
    for (const json& g : d["groups"]) bytes += g["bytes"].get<uint64_t>();
    EXPECT_EQ(bytes, expected.peak) << by;
  }

  // leaks: what is left at the end, never freed, adds up to what the records leave live.
  const json leaks = command_json({"leaks", trace, "--json"});
  uint64_t left = 0;
  for (const json& g : leaks["leaks"]) {
    if (g["class"] != "teardown") left += g["bytes"].get<uint64_t>();
  }
  EXPECT_EQ(left, expected.live);
  EXPECT_EQ(leaks["live_at_exit_bytes"], expected.live);

  // oom: one entry per failed allocation, with what was live on the device then.
  const json oom = command_json({"oom", trace, "--json"});
  ASSERT_EQ(oom["ooms"].size(), expected.failed);
  EXPECT_EQ(oom["ooms"][0]["requested_bytes"], 64 * 1024 * kMiB);
  EXPECT_EQ(oom["ooms"][0]["live_bytes"], 6 * kMiB);  // b and c
  // The program called cudaMalloc, which became cuMemAlloc: both names are kept.
  EXPECT_EQ(oom["ooms"][0]["api"], "cudaMalloc");
  EXPECT_EQ(oom["ooms"][0]["driver_api"], "cuMemAlloc");
  // The simulated device: 16 GiB, of which the context takes 300 MiB and b and c 6 MiB; no
  // other process.
  EXPECT_EQ(oom["ooms"][0]["driver_free_bytes"], (16 * 1024 - 300 - 6) * kMiB);
  // 64 GiB asked of a 16 GiB device: said plainly, in the JSON and at the head of the text.
  EXPECT_EQ(oom["ooms"][0]["verdict"], "larger than the whole device (16.0 GiB): it can never fit");
  const ProcessResult oom_text = cli({"oom", trace});
  EXPECT_NE(oom_text.out.find(" cudaMalloc of 64.0 GiB (device, CUDA_ERROR_OUT_OF_MEMORY) with "
                              "6.00 MiB live\n    larger than the whole device (16.0 GiB): it "
                              "can never fit\n"),
            std::string::npos)
      << oom_text.out;
  EXPECT_EQ(oom["ooms"][0]["other_processes_bytes"], 0u);
  uint64_t held = 0;
  for (const json& h : oom["ooms"][0]["holders"]) held += h["bytes"].get<uint64_t>();
  EXPECT_EQ(held, 6 * kMiB);

  // timeline: the most any bucket holds is the peak, at any resolution.
  for (const std::string resolution : {"0.001", "1000"}) {
    const json timeline =
        command_json({"timeline", trace, "--format", "json", "--resolution", resolution});
    ASSERT_EQ(timeline["devices"].size(), 1u);
    uint64_t most = 0;
    for (const json& v : timeline["devices"][0]["resident"])
      most = std::max(most, v.get<uint64_t>());
    EXPECT_EQ(most, expected.peak) << resolution;
    EXPECT_LE(timeline["devices"][0]["resident"].size(), 10'000u);
  }

  // info: the records by type.
  const json info = command_json({"info", trace, "--json"});
  EXPECT_EQ(info["records"]["alloc"], expected.allocs);
  EXPECT_EQ(info["records"]["alloc_failed"], expected.failed);
  EXPECT_EQ(info["integrity"], "complete");
  EXPECT_EQ(info["format"], "4.10");

  // check: the limits are exact, one line either way.
  const std::string at_peak = std::to_string(expected.peak);
  EXPECT_EQ(cli({"check", trace, "--max-peak", at_peak}).exit_code, 0);
  const ProcessResult over = cli({"check", trace, "--max-peak", std::to_string(expected.peak - 1)});
  EXPECT_EQ(over.exit_code, 1);
  EXPECT_EQ(over.out.rfind("FAIL: peak", 0), 0u) << over.out;
  EXPECT_EQ(std::count(over.out.begin(), over.out.end(), '\n'), 1);
  EXPECT_EQ(cli({"check", trace, "--no-oom"}).exit_code, 1);
  EXPECT_EQ(cli({"check", trace, "--max-leak", std::to_string(expected.live)}).exit_code, 0);
}

TEST_F(AnalysisCommands, DiffMatchesSitesByFramesAcrossTraces) {
  ASSERT_EQ(run_traced("workload_runtime_shared", {"alloc:a:" + mib(2)}).exit_code, 0);
  ASSERT_EQ(run_traced("workload_runtime_shared", {"alloc:a:" + mib(5)}).exit_code, 0);
  const auto found = traces();
  ASSERT_EQ(found.size(), 2u);
  const json diff = command_json({"diff", found[0], found[1], "--json"});
  ASSERT_EQ(diff["devices"].size(), 1u);
  const int64_t change = diff["devices"][0]["peak_change"];
  const int64_t sign =
      diff["devices"][0]["peak_after"] > diff["devices"][0]["peak_before"] ? 1 : -1;
  EXPECT_EQ(change, sign * 3 * static_cast<int64_t>(kMiB));
  // The same call site in both: one site, changed by the same amount, on its device.
  ASSERT_EQ(diff["sites"].size(), 1u);
  EXPECT_EQ(diff["sites"][0]["peak_change"], change);
  EXPECT_EQ(diff["sites"][0]["device"], 0);
  EXPECT_TRUE(diff["devices"][0]["in_before"].get<bool>());
  EXPECT_TRUE(diff["devices"][0]["in_after"].get<bool>());
}

// A device one run did not use is absent there, not a peak of 0 B; each site row names its
// device.
TEST_F(AnalysisCommands, DiffSaysADeviceOneRunDidNotUseIsAbsent) {
  ASSERT_EQ(run_traced("workload_runtime_shared", {"alloc:a:" + mib(2)}).exit_code, 0);
  const auto first = traces();
  ASSERT_EQ(
      run_traced("workload_runtime_shared", {"alloc:a:" + mib(2), "device:1", "alloc:b:" + mib(8)},
                 {{"FAKECUDA_DEVICE_COUNT", "2"}})
          .exit_code,
      0);
  std::string second;
  for (const std::string& t : traces()) {
    if (t != first[0]) second = t;
  }
  const json diff = command_json({"diff", first[0], second, "--json"});
  ASSERT_EQ(diff["devices"].size(), 2u) << diff.dump();
  EXPECT_EQ(diff["devices"][1]["device"], 1);
  EXPECT_FALSE(diff["devices"][1]["in_before"].get<bool>());
  EXPECT_TRUE(diff["devices"][1]["in_after"].get<bool>());
  ASSERT_EQ(diff["sites"].size(), 1u) << diff.dump();
  EXPECT_EQ(diff["sites"][0]["device"], 1);
  EXPECT_EQ(diff["sites"][0]["peak_change"], 8 * static_cast<int64_t>(kMiB));
  const ProcessResult text = cli({"diff", first[0], second});
  EXPECT_NE(text.out.find("  device 1 peak absent -> 8.00 MiB (+8.00 MiB)\n"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("  device 1: at peak +8.00 MiB, never freed +8.00 MiB\n"),
            std::string::npos)
      << text.out;
}

// The fuzzer's seed corpus keeps one trace as format 3 wrote it (zlib's CRC-32 per chunk) and
// as format 4.0 wrote it (no record counts in the chunk headers) beside the same trace written
// now (4.1): the same generator and seed, so the same records. All are read whole, record for
// record the same.
TEST_F(AnalysisCommands, OlderFormatsReadAsBefore) {
  const std::string corpus = std::string(GMT_TEST_DATA_DIR) + "/../fuzz/corpus/";
  const std::string new_trace = corpus + "four-threads.gmt";
  json new_info = command_json({"info", new_trace, "--json"});
  EXPECT_EQ(new_info["format"], "4.1");
  EXPECT_EQ(new_info["integrity"], "complete");
  EXPECT_TRUE(new_info["problems"].empty()) << new_info.dump(1);
  EXPECT_GT(new_info["events"].get<uint64_t>(), 1000u);
  new_info.erase("path");
  new_info.erase("format");
  const ProcessResult new_dump = cli({"dump", new_trace});
  ASSERT_EQ(new_dump.exit_code, 0) << new_dump.err;
  EXPECT_EQ(new_dump.out.find("left_out"), std::string::npos);
  for (const auto& [name, version] : {std::pair{"format3-four-threads.gmt", "3.0"},
                                      std::pair{"format40-four-threads.gmt", "4.0"}}) {
    const std::string old_trace = corpus + name;
    json old_info = command_json({"info", old_trace, "--json"});
    EXPECT_EQ(old_info["format"], version);
    old_info.erase("path");
    old_info.erase("format");
    EXPECT_EQ(old_info, new_info) << name;
    const ProcessResult old_dump = cli({"dump", old_trace});
    ASSERT_EQ(old_dump.exit_code, 0) << old_dump.err;
    EXPECT_EQ(old_dump.out, new_dump.out) << name;
  }
}

TEST_F(AnalysisCommands, UnreadableFilesAreNamed) {
  const std::string path = dir_ + "/not-a-trace.gmt";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("hello", f);
  std::fclose(f);
  for (const std::string command : {"peak", "leaks", "oom", "info", "timeline"}) {
    const ProcessResult r = cli({command, path});
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_NE(r.err.find(path), std::string::npos) << command << ": " << r.err;
  }
  EXPECT_EQ(cli({"check", path}).exit_code, 2);
}

}  // namespace
}  // namespace gmt::test
