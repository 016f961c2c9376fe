// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace export` in each format, on traced workloads of known sizes, read back with each
// format's own reader where there is one on the machine (protoc for pprof, Python's pickle for
// memviz) and checked value for value: the flame graphs add up to the peak and to what was never
// freed, pprof's inuse_space to the peak and alloc_space to every byte allocated, the counter
// track peaks at the peak.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/integration/analysis/phases_workload.h"
#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

class ExportFormats : public TracedRun {
 protected:
  // a 1, b 4, free a, c 2, a failed 64 GiB, d 8, e 3, free b, free d, f 5 (MiB): the peak is
  // b+c+d+e = 17 MiB, c+e+f = 10 MiB are never freed, 23 MiB were allocated in 6 allocations.
  static constexpr uint64_t kPeak = 17 * kMiB;
  static constexpr uint64_t kLeft = 10 * kMiB;
  static constexpr uint64_t kAllocated = 23 * kMiB;

  void SetUp() override {
    TracedRun::SetUp();
    const ProcessResult run =
        run_traced("workload_runtime_shared",
                   {"alloc:a:" + mib(1), "alloc:b:" + mib(4), "free:a", "alloc:c:" + mib(2),
                    "oom:" + mib(64 * 1024), "alloc:d:" + mib(8), "alloc:e:" + mib(3), "free:b",
                    "free:d", "alloc:f:" + mib(5)});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    trace_ = only_trace();
  }

  // Exports the trace to a file in the scratch folder and returns its path.
  std::string exported(const std::string& format, std::vector<std::string> extra = {}) {
    const std::string path = dir_ + "/export." + format;
    std::vector<std::string> args = {"export", trace_, "--format", format, "-o", path};
    args.insert(args.end(), extra.begin(), extra.end());
    const ProcessResult r = cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return path;
  }

  // A shell pipeline's stdout; a test failure when it fails.
  ProcessResult shell(const std::string& command) const {
    ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", command};
    spec.cwd = dir_;
    const ProcessResult r = run_process(spec);
    EXPECT_EQ(r.exit_code, 0) << command << "\n" << r.err;
    return r;
  }

  // "frames;... bytes" lines: bytes by line.
  static std::map<std::string, uint64_t> folded_lines(const std::string& text) {
    std::map<std::string, uint64_t> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      const std::size_t space = line.rfind(' ');
      EXPECT_NE(space, std::string::npos) << line;
      lines[line.substr(0, space)] += std::stoull(line.substr(space + 1));
    }
    return lines;
  }

  std::string trace_;
};

TEST_F(ExportFormats, FoldedStacksAddUpToThePeakAndToWhatWasNeverFreed) {
  const json rep = report({trace_});
  ASSERT_EQ(device(rep, 0)["peak_bytes"], kPeak);
  ASSERT_EQ(device(rep, 0)["live_at_exit_bytes"], kLeft);

  const auto peak = folded_lines(read_file(exported("folded")));
  uint64_t total = 0;
  for (const auto& [stack, bytes] : peak) {
    total += bytes;
    EXPECT_EQ(stack.rfind("device 0;", 0), 0u) << stack;  // root first
    // Each frame with its file and line.
    EXPECT_NE(stack.find(";main (alloc_ops.cpp:"), std::string::npos) << stack;
  }
  EXPECT_EQ(total, kPeak);

  const auto leaks = folded_lines(read_file(exported("folded", {"--what", "leaks"})));
  total = 0;
  for (const auto& [stack, bytes] : leaks) {
    total += bytes;
    EXPECT_EQ(stack.rfind("device 0;unfreed;", 0), 0u) << stack;
  }
  EXPECT_EQ(total, kLeft);

  // "-o -": the same text on stdout.
  const ProcessResult out = cli({"export", trace_, "--format", "folded", "-o", "-"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(folded_lines(out.out), peak);
}

// protoc's text output of the profile: each sample's values and labels, and the string table.
struct DecodedProfile {
  std::vector<std::vector<int64_t>> values;
  std::vector<int64_t> device_labels;
  std::vector<std::size_t> location_counts;
  std::vector<std::string> strings;
  std::vector<std::pair<int64_t, int64_t>> sample_types;
  int64_t default_sample_type = -1;
};

DecodedProfile parse_protoc_text(const std::string& text) {
  DecodedProfile p;
  std::istringstream in(text);
  std::string section;
  int depth = 0;
  for (std::string line; std::getline(in, line);) {
    const std::size_t start = line.find_first_not_of(' ');
    if (start == std::string::npos) continue;
    line = line.substr(start);
    if (line.back() == '{') {
      // proto3 text leaves zero values out: a label without "num" has num 0.
      if (depth == 1 && section == "sample" && line == "label {") p.device_labels.push_back(0);
      if (depth == 0) {
        section = line.substr(0, line.find(' '));
        if (section == "sample") {
          p.values.emplace_back();
          p.location_counts.push_back(0);
        }
        if (section == "sample_type") p.sample_types.emplace_back(-1, -1);
      }
      ++depth;
      continue;
    }
    if (line == "}") {
      --depth;
      continue;
    }
    const std::size_t colon = line.find(": ");
    const std::string key = line.substr(0, colon), value = line.substr(colon + 2);
    if (depth == 0 && key == "string_table") {
      p.strings.push_back(json::parse(value).get<std::string>());
    } else if (depth == 0 && key == "default_sample_type") {
      p.default_sample_type = std::stoll(value);
    } else if (section == "sample" && depth == 1 && key == "value") {
      p.values.back().push_back(std::stoll(value));
    } else if (section == "sample" && depth == 1 && key == "location_id") {
      ++p.location_counts.back();
    } else if (section == "sample" && depth == 2 && key == "num") {
      p.device_labels.back() = std::stoll(value);
    } else if (section == "sample_type" && key == "type") {
      p.sample_types.back().first = std::stoll(value);
    } else if (section == "sample_type" && key == "unit") {
      p.sample_types.back().second = std::stoll(value);
    }
  }
  return p;
}

TEST_F(ExportFormats, PprofDecodesWithProfileProtoAndAddsUpExactly) {
  const std::string path = exported("pprof");
  const std::string bytes = read_file(path);
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(static_cast<uint8_t>(bytes[0]), 0x1f);  // gzip
  EXPECT_EQ(static_cast<uint8_t>(bytes[1]), 0x8b);
  const ProcessResult decoded = shell("gzip -dc '" + path +
                                      "' | protoc --proto_path='" GMT_TEST_DATA_DIR
                                      "' --decode=perftools.profiles.Profile profile.proto");
  const DecodedProfile p = parse_protoc_text(decoded.out);
  ASSERT_FALSE(p.strings.empty());
  EXPECT_EQ(p.strings[0], "");
  std::vector<std::string> types;
  for (const auto& [type, unit] : p.sample_types) {
    types.push_back(p.strings.at(type) + "/" + p.strings.at(unit));
  }
  EXPECT_EQ(types, (std::vector<std::string>{"alloc_objects/count", "alloc_space/bytes",
                                             "inuse_objects/count", "inuse_space/bytes"}));
  EXPECT_EQ(p.strings.at(p.default_sample_type), "inuse_space");

  int64_t alloc_objects = 0, alloc_space = 0, inuse_objects = 0, inuse_space = 0;
  ASSERT_EQ(p.device_labels.size(), p.values.size());
  for (std::size_t i = 0; i < p.values.size(); ++i) {
    ASSERT_EQ(p.values[i].size(), 4u);
    EXPECT_EQ(p.device_labels[i], 0);
    EXPECT_GE(p.location_counts[i], 2u);  // at least one frame and the device's root
    alloc_objects += p.values[i][0];
    alloc_space += p.values[i][1];
    inuse_objects += p.values[i][2];
    inuse_space += p.values[i][3];
  }
  EXPECT_EQ(alloc_objects, 6);
  EXPECT_EQ(alloc_space, static_cast<int64_t>(kAllocated));
  EXPECT_EQ(inuse_objects, 4);
  EXPECT_EQ(inuse_space, static_cast<int64_t>(kPeak));
  EXPECT_NE(std::find(p.strings.begin(), p.strings.end(), "main"), p.strings.end());
  EXPECT_NE(std::find(p.strings.begin(), p.strings.end(), "device 0"), p.strings.end());
}

TEST_F(ExportFormats, SpeedscopeHasThePeakAndTheLeaksAsTwoProfilesInBytes) {
  const json file = json::parse(read_file(exported("speedscope")));
  EXPECT_EQ(file["$schema"], "https://www.speedscope.app/file-format-schema.json");
  const json& frames = file["shared"]["frames"];
  ASSERT_EQ(file["profiles"].size(), 2u);
  const std::pair<const char*, uint64_t> expected[] = {{"live at the peak", kPeak},
                                                       {"never freed", kLeft}};
  for (std::size_t i = 0; i < 2; ++i) {
    const json& profile = file["profiles"][i];
    EXPECT_EQ(profile["type"], "sampled");
    EXPECT_EQ(profile["name"], expected[i].first);
    EXPECT_EQ(profile["unit"], "bytes");
    EXPECT_EQ(profile["startValue"], 0);
    EXPECT_EQ(profile["endValue"], expected[i].second);
    ASSERT_EQ(profile["samples"].size(), profile["weights"].size());
    uint64_t total = 0;
    for (std::size_t s = 0; s < profile["samples"].size(); ++s) {
      total += profile["weights"][s].get<uint64_t>();
      const json& sample = profile["samples"][s];
      ASSERT_GE(sample.size(), 2u);
      for (const json& index : sample) ASSERT_LT(index.get<std::size_t>(), frames.size());
      EXPECT_EQ(frames[sample[0].get<std::size_t>()]["name"], "device 0");  // root first
    }
    EXPECT_EQ(total, expected[i].second) << expected[i].first;
  }
}

TEST_F(ExportFormats, PerfettoCountersPeakAtThePeakWithTheOomAndPeakInstants) {
  const json file = json::parse(read_file(exported("perfetto")));
  const json rep = report({trace_});
  uint64_t most = 0;
  std::size_t counters = 0;
  std::vector<json> instants;
  for (const json& e : file["traceEvents"]) {
    if (e["ph"] == "C" && e["name"] == "device 0 resident") {
      most = std::max(most, e["args"]["bytes"].get<uint64_t>());
      ++counters;
    }
    if (e["ph"] == "i") instants.push_back(e);
  }
  EXPECT_EQ(most, kPeak);
  EXPECT_GE(counters, 2u);
  ASSERT_EQ(instants.size(), 2u);
  EXPECT_EQ(instants[0]["name"], "peak device 0");
  EXPECT_EQ(instants[0]["args"]["bytes"], kPeak);
  EXPECT_DOUBLE_EQ(instants[0]["ts"].get<double>(),
                   device(rep, 0)["peak_time_ns"].get<double>() / 1000.0);
  EXPECT_EQ(instants[1]["name"], "OOM device 0");
  EXPECT_EQ(instants[1]["args"]["requested_bytes"], 64 * 1024 * kMiB);
  EXPECT_EQ(instants[1]["args"]["live_bytes"], 6 * kMiB);  // b and c
}

TEST_F(ExportFormats, MemvizLoadsInPythonWithSegmentsAndTheDeviceTrace) {
  const std::string path = exported("memviz");
  const ProcessResult loaded = shell(
      "python3 -c 'import json, pickle, sys; "
      "print(json.dumps(pickle.load(open(sys.argv[1], \"rb\"))))' '" +
      path + "'");
  const json snapshot = json::parse(loaded.out);
  ASSERT_TRUE(snapshot.is_object());
  EXPECT_EQ(snapshot.size(), 2u);

  // What was live at the end: c, e and f, one segment with one block each.
  std::multiset<uint64_t> sizes;
  for (const json& s : snapshot["segments"]) {
    sizes.insert(s["total_size"].get<uint64_t>());
    EXPECT_EQ(s["device"], 0);
    EXPECT_EQ(s["allocated_size"], s["total_size"]);
    EXPECT_EQ(s["active_size"], s["total_size"]);
    EXPECT_EQ(s["stream"], 0);
    EXPECT_EQ(s["segment_type"], s["total_size"].get<uint64_t>() <= kMiB ? "small" : "large");
    ASSERT_EQ(s["blocks"].size(), 1u);
    const json& b = s["blocks"][0];
    EXPECT_EQ(b["address"], s["address"]);
    EXPECT_EQ(b["size"], s["total_size"]);
    EXPECT_EQ(b["requested_size"], s["total_size"]);
    EXPECT_EQ(b["state"], "active_allocated");
    ASSERT_FALSE(b["frames"].empty());
    EXPECT_EQ(b["frames"], s["frames"]);
  }
  EXPECT_EQ(sizes, (std::multiset<uint64_t>{2 * kMiB, 3 * kMiB, 5 * kMiB}));

  ASSERT_EQ(snapshot["device_traces"].size(), 1u);
  std::vector<std::string> actions;
  std::map<uint64_t, uint64_t> live;  // by address, replayed from the entries
  uint64_t most = 0, now = 0;
  for (const json& e : snapshot["device_traces"][0]) {
    const std::string action = e["action"];
    const uint64_t size = e["size"];
    actions.push_back(action + ":" + std::to_string(size / kMiB));
    for (const char* key : {"addr", "stream", "time_us", "frames"}) {
      EXPECT_TRUE(e.contains(key)) << key << " in " << e.dump();
    }
    if (action == "alloc") {
      live[e["addr"]] = size;
      now += size;
      most = std::max(most, now);
    } else if (action == "free_completed") {
      EXPECT_EQ(live[e["addr"]], size);
      live.erase(e["addr"].get<uint64_t>());
      now -= size;
    } else if (action == "oom") {
      EXPECT_TRUE(e["device_free"].is_number_unsigned()) << e.dump();
    }
    if (action != "oom") {
      ASSERT_FALSE(e["frames"].empty()) << e.dump();
      for (const json& f : e["frames"]) {
        EXPECT_TRUE(f["filename"].is_string() && f["line"].is_number() && f["name"].is_string())
            << f.dump();
      }
    }
  }
  EXPECT_EQ(actions,
            (std::vector<std::string>{
                "segment_alloc:1", "alloc:1", "segment_alloc:4", "alloc:4", "free_completed:1",
                "segment_free:1", "segment_alloc:2", "alloc:2", "oom:65536", "segment_alloc:8",
                "alloc:8", "segment_alloc:3", "alloc:3", "free_completed:4", "segment_free:4",
                "free_completed:8", "segment_free:8", "segment_alloc:5", "alloc:5"}));
  EXPECT_EQ(most, kPeak);
  EXPECT_EQ(now, kLeft);
  // The entries end where the segments begin: the viewer walks back from them.
  for (const json& s : snapshot["segments"]) EXPECT_EQ(live.count(s["address"]), 1u);
}

// The phases workload (views_phases_test.cpp) under `gpumemtrace run`: 300 MiB per context, a
// peak of 218 MiB in the last step's backward, phases from NVTX and gpumemtrace.h.
class ExportPhases : public TracedRun {};

TEST_F(ExportPhases, PerfettoHasPhaseSlicesAndViewCounters) {
  std::map<std::string, std::string> env = base_env();
  env.erase("GPUMEMTRACE_OUTPUT");
  if (!sanitizer_runtime().empty()) env["LD_PRELOAD"] = sanitizer_runtime();
  const ProcessResult run =
      cli({"run", "-o", "trace.%p.gmt", "--", workload("workload_phases"), "50"}, env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string out = dir_ + "/phases.json";
  const ProcessResult r = cli({"export", only_trace(), "--format", "perfetto", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(out);
  const json file = json::parse(in);

  std::map<std::string, int> slices;
  uint64_t resident = 0, nvml_process = 0;
  for (const json& e : file["traceEvents"]) {
    if (e["ph"] == "X") {
      ++slices[e["name"]];
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      EXPECT_EQ(e["args"]["ended"], true) << e.dump();
    }
    if (e["ph"] != "C") continue;
    const uint64_t bytes = e["args"]["bytes"];
    if (e["name"] == "device 0 resident") resident = std::max(resident, bytes);
    if (e["name"] == "device 0 view nvml_process") nvml_process = std::max(nvml_process, bytes);
  }
  EXPECT_EQ(slices, kPhasesWorkloadRuns);
  EXPECT_EQ(resident, 218 * kMiB);
  // The sampler reads NVML at the new high: the peak and the context's 300 MiB.
  EXPECT_EQ(nvml_process, (218 + 300) * kMiB);
}

TEST_F(ExportFormats, UnreadableTracesAndUnwritableOutputsAreNamed) {
  const std::string not_trace = dir_ + "/not-a-trace.gmt";
  std::ofstream(not_trace) << "hello";
  const ProcessResult bad = cli({"export", not_trace, "--format", "folded", "-o", "-"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find(not_trace), std::string::npos) << bad.err;
  const std::string nowhere = dir_ + "/missing/dir/out.folded";
  const ProcessResult unwritable = cli({"export", trace_, "--format", "folded", "-o", nowhere});
  EXPECT_EQ(unwritable.exit_code, 1);
  EXPECT_NE(unwritable.err.find(nowhere), std::string::npos) << unwritable.err;
}

}  // namespace
}  // namespace gmt::test
