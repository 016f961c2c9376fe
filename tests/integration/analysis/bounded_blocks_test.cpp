// SPDX-License-Identifier: Apache-2.0
// A bounded trace of a program behind a caching allocator (block events, format 4.2): its
// checkpoints carry the allocator's live blocks and segments, so that a run writing fifty times
// and more the limit still finds the planted leak at its site with every byte the unbounded run
// finds, and the allocator's allocated and reserved bytes at the end are the unbounded run's.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/traced_run_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kLimit = 1 * kMiB;
constexpr uint64_t kChunk = 64 * 1024;
// Steps of workload_cached_training (about 170 bytes of trace each), one kept activation every
// kKeepEvery: the kept blocks are spread over the whole run, most of them long before the
// history a bounded trace keeps, and often enough that the site grows inside that history too:
// that history is about 1 300 steps, and `leaks` calls a site growing when at least 5 of its 9
// sample intervals rise, so one kept block every 200 steps (6 or 7 in it) failed now and then
// on a loaded machine, where the history comes out shorter.
constexpr int kSteps = 320'000;
constexpr int kKeepEvery = 160;

class BoundedBlocks : public TracedRun {
 protected:
  struct Run {
    std::string trace;
    std::string output;
  };
  // The allocator reports as PyTorch's does (the sizes asked for), so that the analyzer rebuilds
  // the carried blocks' extents as it does the others'.
  Run traced_training(const std::string& name, std::map<std::string, std::string> env) {
    env["SIM_ALLOCATOR"] = "pytorch";
    const ProcessResult r =
        run_traced("workload_cached_training", {std::to_string(kSteps), std::to_string(kKeepEvery)},
                   std::move(env));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    fs::create_directories(dir_ + "/kept");
    const std::string path = dir_ + "/kept/" + name;
    fs::rename(only_trace(), path);
    return {path, r.out};
  }
  json command_json(const std::vector<std::string>& args) const {
    const ProcessResult r = cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json();
  }
};

bool names_function(const json& group, const std::string& function) {
  for (const json& f : group["frames"]) {
    if (f["function"].is_string() &&
        f["function"].get<std::string>().find(function) != std::string::npos)
      return true;
  }
  return false;
}

// The group at keep_activation, the probable leaks, and the bytes and counts by level.
struct Groups {
  const json* kept = nullptr;
  int probable_groups = 0;
  uint64_t block_bytes = 0;
  uint64_t cache_bytes = 0;
  uint64_t cache_count = 0;
};
Groups groups_of(const json& leaks) {
  Groups g;
  for (const json& group : leaks["leaks"]) {
    if (group["class"] == "probable_leak") ++g.probable_groups;
    if (names_function(group, "keep_activation")) g.kept = &group;
    if (group["level"] == "block") g.block_bytes += group["bytes"].get<uint64_t>();
    if (group["level"] == "cache") {
      g.cache_bytes += group["bytes"].get<uint64_t>();
      g.cache_count += group["count"].get<uint64_t>();
    }
  }
  return g;
}

TEST_F(BoundedBlocks, TheLeakAndTheAllocatorsFiguresAreTheUnboundedRuns) {
  const Run bounded = traced_training("bounded.gmt", {{"GPUMEMTRACE_MAX_SIZE", "1MiB"}});
  const Run whole = traced_training("whole.gmt", {});
  EXPECT_GE(fs::file_size(whole.trace), 50 * kLimit);
  EXPECT_LE(fs::file_size(bounded.trace), kLimit + 2 * kChunk);

  const int64_t kept_count = printed(whole.output, "kept_count");
  const int64_t kept_bytes = printed(whole.output, "kept_bytes");
  const int64_t allocated = printed(whole.output, "allocated");
  const int64_t reserved = printed(whole.output, "reserved");
  const int64_t segments = printed(whole.output, "segments");
  ASSERT_EQ(kept_count, kSteps / kKeepEvery);
  ASSERT_EQ(printed(bounded.output, "kept_bytes"), kept_bytes);  // the same run, twice
  ASSERT_EQ(printed(bounded.output, "reserved"), reserved);

  // History was dropped: most of the run, with most of the kept blocks, is before the window.
  const json info = command_json({"info", bounded.trace, "--json"});
  ASSERT_TRUE(info["history"].is_object()) << info.dump();
  const uint64_t kept_from_ns = info["history"]["kept_from_ns"].get<uint64_t>();
  EXPECT_GT(kept_from_ns, 0u);
  EXPECT_GT(info["history"]["dropped_events"].get<uint64_t>(), 0u);

  const json leaks = command_json({"leaks", bounded.trace, "--json"});
  const json whole_leaks = command_json({"leaks", whole.trace, "--json"});
  const Groups b = groups_of(leaks);
  const Groups w = groups_of(whole_leaks);
  // The planted leak at keep_activation, all of its blocks, as the unbounded run finds it.
  ASSERT_NE(w.kept, nullptr) << whole_leaks.dump(1);
  ASSERT_NE(b.kept, nullptr) << leaks.dump(1);
  EXPECT_EQ((*w.kept)["class"], "probable_leak");
  EXPECT_EQ((*b.kept)["class"], "probable_leak");
  EXPECT_EQ(w.probable_groups, 1) << whole_leaks.dump(1);
  EXPECT_EQ(b.probable_groups, 1) << leaks.dump(1);
  EXPECT_EQ((*w.kept)["bytes"], kept_bytes);
  EXPECT_EQ((*b.kept)["bytes"], kept_bytes);
  EXPECT_EQ((*b.kept)["count"], kept_count);
  EXPECT_EQ((*b.kept)["level"], "block");
  EXPECT_EQ((*b.kept)["frames"], (*w.kept)["frames"]);
  // The allocator's allocated bytes (its live blocks) and its free cache at the end: the
  // unbounded run's, and the allocator's own.
  EXPECT_EQ(b.block_bytes, static_cast<uint64_t>(allocated));
  EXPECT_EQ(w.block_bytes, static_cast<uint64_t>(allocated));
  EXPECT_EQ(b.cache_bytes, static_cast<uint64_t>(reserved - allocated));
  EXPECT_EQ(w.cache_bytes, b.cache_bytes);
  EXPECT_EQ(b.cache_count, static_cast<uint64_t>(segments));
  EXPECT_EQ(leaks["live_at_exit_bytes"], reserved);
  EXPECT_EQ(whole_leaks["live_at_exit_bytes"], reserved);
}

}  // namespace
}  // namespace gmt::test
