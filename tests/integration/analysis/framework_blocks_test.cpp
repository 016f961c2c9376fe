// SPDX-License-Identifier: Apache-2.0
// A caching allocator's block events (gpumemtrace_framework_block, format 4.2), end to end: the
// simulated allocator of tests/workloads/caching_allocator.cpp under the preload, its planted
// leak found at the line that keeps the blocks rather than where the cache grew, and its own
// allocated and reserved bytes in the views without any report.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/integration/traced_run_fixture.h"
#include "tests/unit/chunked_file.h"
#include "tests/unit/trace_bytes.h"

using nlohmann::json;

namespace gmt::test {
namespace {

class FrameworkBlocks : public TracedRun {
 protected:
  // Runs the training loop traced; its printed figures are in last_output_.
  std::string traced_training() {
    const ProcessResult run = run_traced("workload_cached_training", {"60"});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    last_output_ = run.out;
    return only_trace();
  }

  json command_json(const std::vector<std::string>& args) const {
    const ProcessResult r = cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  }

  // `export --format memviz` of TRACE, as Python's pickle reads it (in JSON); null when either
  // step failed (the test fails with its error).
  json memviz_snapshot(const std::string& trace) const {
    const std::string pickle = dir_ + "/snapshot.pickle";
    const ProcessResult exported = cli({"export", trace, "--format", "memviz", "-o", pickle});
    EXPECT_EQ(exported.exit_code, 0) << exported.err;
    ProcessSpec spec;
    spec.argv = {
        "/usr/bin/env", "python3", "-c",
        "import json, pickle, sys; print(json.dumps(pickle.load(open(sys.argv[1], 'rb'))))",
        pickle};
    const ProcessResult loaded = run_process(spec);
    EXPECT_EQ(loaded.exit_code, 0) << loaded.err;
    return exported.exit_code == 0 && loaded.exit_code == 0 ? json::parse(loaded.out) : json();
  }
  // `dump TRACE`'s records of one kind ("block", "stack"), one JSON object each.
  std::vector<json> records(const std::string& trace, const std::string& kind) const {
    const ProcessResult dump = cli({"dump", trace});
    EXPECT_EQ(dump.exit_code, 0) << dump.err;
    std::vector<json> found;
    std::size_t start = 0;
    while (start < dump.out.size()) {
      const std::size_t end = dump.out.find('\n', start);
      json line = json::parse(dump.out.substr(start, end - start));
      start = end == std::string::npos ? dump.out.size() : end + 1;
      if (line["record"] == kind) found.push_back(std::move(line));
    }
    return found;
  }
  std::vector<json> block_records(const std::string& trace) const {
    return records(trace, "block");
  }
};

// The value of a row of a views table of `report`'s text ("2.00 GiB"), in the first table whose
// title starts with `title`; "" when there is none.
std::string views_row(const std::string& text, const std::string& title, const std::string& label) {
  const std::size_t table = text.find("    " + title);
  if (table == std::string::npos) return "";
  const std::size_t row = text.find("\n      " + label + " ", table);
  if (row == std::string::npos) return "";
  std::string line = text.substr(row + 7 + label.size());
  line = line.substr(0, line.find('\n'));
  line = line.substr(line.find_first_not_of(' '));
  return line.substr(0, line.find("  "));
}

// The frame of `function` in a group's frames, or null.
const json* frame_of(const json& group, const std::string& function) {
  for (const json& f : group["frames"]) {
    if (f["function"].is_string() &&
        f["function"].get<std::string>().find(function) != std::string::npos) {
      return &f;
    }
  }
  return nullptr;
}

// `top` shows the allocator's allocated and reserved bytes once: from its blocks, not again
// from the views that are made of the same blocks.
TEST_F(FrameworkBlocks, TopShowsTheAllocatorsFiguresOnce) {
  const std::string trace = traced_training();
  const json frame = command_json({"top", "--once", "--json", trace});
  ASSERT_EQ(frame["processes"].size(), 1u) << frame.dump();
  const json& device = frame["processes"][0]["devices"][0];
  EXPECT_EQ(device["framework_allocated_bytes"], printed(last_output_, "allocated"))
      << device.dump();
  EXPECT_EQ(device["framework_reserved_bytes"], printed(last_output_, "reserved")) << device.dump();
  // Its live sites are its blocks by the line that asked for them and its free cache, not its
  // segments by the line that grew the cache: the kept activations lead, and the rows add up to
  // what the allocator reserved (every tracked byte is its).
  const json& sites = device["top_sites"];
  ASSERT_FALSE(sites.empty());
  EXPECT_EQ(sites[0]["level"], "block") << sites.dump(1);
  EXPECT_NE(frame_of(sites[0], "keep_activation"), nullptr) << sites.dump(1);
  EXPECT_EQ(sites[0]["bytes"], printed(last_output_, "kept_bytes"));
  int64_t total = 0;
  for (const json& site : sites) {
    EXPECT_EQ(site["allocator"], "other") << site.dump();
    total += site["bytes"].get<int64_t>();
  }
  EXPECT_EQ(total, printed(last_output_, "reserved"));
}

TEST_F(FrameworkBlocks, TheLeakBehindTheCacheIsAtTheLineThatKeepsTheBlocks) {
  const std::string trace = traced_training();
  const int64_t kept_count = printed(last_output_, "kept_count");
  const int64_t kept_bytes = printed(last_output_, "kept_bytes");
  const int64_t allocated = printed(last_output_, "allocated");
  const int64_t reserved = printed(last_output_, "reserved");
  const int64_t segments = printed(last_output_, "segments");
  ASSERT_EQ(kept_count, 20);  // every third of 60 steps
  // Each rounded to 512 bytes, some with the rest of a segment too small to split off.
  ASSERT_GE(kept_bytes, 20 * (3 * static_cast<int64_t>(kMiB) + 1024));
  // The weights' block and the kept ones.
  ASSERT_EQ(allocated, kept_bytes + 24 * static_cast<int64_t>(kMiB));

  const json leaks = command_json({"leaks", trace, "--json"});
  const json* top = nullptr;
  int probable = 0;
  for (const json& g : leaks["leaks"]) {
    if (g["class"] != "probable_leak") continue;
    ++probable;
    if (top == nullptr) top = &g;
  }
  // One probable leak: the kept blocks. The segments' site grew with them but is not a row.
  EXPECT_EQ(probable, 1) << leaks.dump(1);
  ASSERT_NE(top, nullptr) << leaks.dump(1);
  EXPECT_EQ((*top)["bytes"], kept_bytes);
  EXPECT_EQ((*top)["count"], kept_count);
  EXPECT_EQ((*top)["resident_bytes"], kept_bytes);
  EXPECT_EQ((*top)["allocator"], "other");
  EXPECT_EQ((*top)["level"], "block");
  EXPECT_EQ((*top)["freed_at_exit"], false);
  const json* keep = frame_of(*top, "keep_activation");
  ASSERT_NE(keep, nullptr) << top->dump(1);
  EXPECT_EQ((*keep)["line"], printed(last_output_, "keep_line"));
  EXPECT_NE((*keep)["file"].get<std::string>().find("cached_training.cpp"), std::string::npos);

  // What the allocator holds free is one cached row; the weights' block is unfreed at its own
  // site; nothing else, and together they are every byte live at the end.
  int cached = 0;
  int64_t total = 0;
  for (const json& g : leaks["leaks"]) {
    EXPECT_EQ(g["allocator"], "other") << g.dump();
    if (g["class"] != "teardown") total += g["resident_bytes"].get<int64_t>();
    if (g["class"] == "cached") {
      ++cached;
      EXPECT_EQ(g["level"], "cache");
      EXPECT_EQ(g["bytes"], reserved - allocated);
      EXPECT_EQ(g["count"], segments);
    } else if (g["class"] == "unfreed") {
      EXPECT_EQ(g["bytes"], 24 * static_cast<int64_t>(kMiB));
      EXPECT_EQ(g["count"], 1);
    }
  }
  EXPECT_EQ(cached, 1);
  EXPECT_EQ(leaks["leaks"].size(), 3u) << leaks.dump(1);
  EXPECT_EQ(leaks["live_at_exit_bytes"], reserved);
  EXPECT_EQ(total, reserved);
}

TEST_F(FrameworkBlocks, TheViewsHaveTheAllocatorsOwnFiguresAtExit) {
  const std::string trace = traced_training();
  const int64_t allocated = printed(last_output_, "allocated");
  const int64_t reserved = printed(last_output_, "reserved");
  const json r = report({trace});
  const json& d = device(r, 0);
  EXPECT_EQ(number(d, "views.at_exit.framework_allocated_bytes"), allocated);
  EXPECT_EQ(number(d, "views.at_exit.framework_reserved_bytes"), reserved);
  EXPECT_EQ(number(d, "views.at_exit.framework_cache_bytes"), reserved - allocated);
  EXPECT_EQ(number(d, "views.at_exit.tracked_bytes"), reserved);
  // Every tracked byte is the allocator's.
  EXPECT_EQ(number(d, "views.at_exit.outside_framework_bytes"), 0);
}

TEST_F(FrameworkBlocks, DumpPrintsTheBlockRecords) {
  const std::string trace = traced_training();
  int blocks = 0;
  int segment_allocs = 0;
  for (const json& line : block_records(trace)) {
    ++blocks;
    EXPECT_EQ(line["allocator"], 0);
    EXPECT_EQ(line["device"], 0);
    EXPECT_TRUE(line.contains("thread") && line.contains("stream") && line.contains("stack"));
    if (line["action"] == 3) ++segment_allocs;
  }
  EXPECT_EQ(segment_allocs, printed(last_output_, "segments"));
  // Per step: 5 allocs, 5 frees of two events each, and every third step a kept block; the
  // weights; the segments.
  EXPECT_EQ(blocks, 60 * 15 + 20 + 1 + segment_allocs);
  // The report counts them beside the driver's events (one per segment here).
  const json r = report({trace});
  EXPECT_EQ(r["traces"][0]["block_events"], blocks);
  EXPECT_EQ(r["traces"][0]["events"], segment_allocs);
  const std::string text = cli({"report", trace}).out;
  EXPECT_NE(text.find("  events        " + std::to_string(segment_allocs) + " driver and " +
                      std::to_string(blocks) + " caching-allocator block events over "),
            std::string::npos)
      << text;
}

// GPUMEMTRACE_SELF_TIME=1: the trace ends with what recording cost, counting every event the
// recorder handled (the segments' driver allocations and every block event), with the time of
// taking stacks (on by default) inside the recorder's.
TEST_F(FrameworkBlocks, TheRecordersCostIsNotedWhenAskedFor) {
  const ProcessResult run =
      run_traced("workload_cached_training", {"60"}, {{"GPUMEMTRACE_SELF_TIME", "1"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  last_output_ = run.out;
  const std::string trace = only_trace();
  const int segments = printed(last_output_, "segments");
  const long long blocks = static_cast<long long>(block_records(trace).size());
  ASSERT_EQ(blocks, 60 * 15 + 20 + 1 + segments);
  const json r = command_json({"report", "--json", trace});
  std::vector<std::string> cost_notes;
  for (const json& note : r["traces"][0]["notes"]) {
    if (note.get<std::string>().starts_with("recorder cost: ")) cost_notes.push_back(note);
  }
  ASSERT_EQ(cost_notes.size(), 1u) << r["traces"][0]["notes"].dump();
  long long events = 0, total_ns = 0, stack_ns = 0, stacks = 0, python_ns = 0, native_frames = 0,
            remembered = 0, by_libunwind = 0, clock_read_ns = 0;
  int parsed = 0;
  ASSERT_EQ(std::sscanf(cost_notes[0].c_str(),
                        "recorder cost: %lld events, %lld ns in the recorder, %lld ns of it taking "
                        "%lld stacks (%lld ns of those reading Python frames, %lld native frames, "
                        "%lld native stacks remembered, %lld by libunwind) "
                        "(GPUMEMTRACE_SELF_TIME); the measurement's own clock reads, %lld ns "
                        "each, are in these figures: one per event and four more per stack, three "
                        "of them in the stacks' ns and one in the Python frames'%n",
                        &events, &total_ns, &stack_ns, &stacks, &python_ns, &native_frames,
                        &remembered, &by_libunwind, &clock_read_ns, &parsed),
            9)
      << cost_notes[0];
  EXPECT_EQ(static_cast<std::size_t>(parsed), cost_notes[0].size()) << cost_notes[0];
  EXPECT_EQ(events, blocks + segments);  // each segment is one driver allocation too
  // A stack for each block allocation (60 steps of 5, the 20 kept and the first) and each
  // segment, once as the driver's allocation and once as the allocator's.
  EXPECT_EQ(stacks, 60 * 5 + 20 + 1 + 2 * segments);
  EXPECT_GT(stack_ns, 0);
  EXPECT_GT(total_ns, stack_ns);
  // No Python in this program: native frames in every stack, and looking for Python frames is a
  // part of taking them.
  EXPECT_GE(native_frames, stacks);
  EXPECT_LT(python_ns, stack_ns);
  // Every native stack by our walker, and each walked in full once: the first time at its
  // place, where it is a stack the trace had not seen; every later one remembered.
  EXPECT_EQ(by_libunwind, 0);
  EXPECT_EQ(stacks - remembered, static_cast<long long>(records(trace, "stack").size()));

  // Without the variable, no note (and no clock read for it).
  std::filesystem::remove(trace);
  const ProcessResult plain = run_traced("workload_cached_training", {"60"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const json plain_report = command_json({"report", "--json", only_trace()});
  for (const json& note : plain_report["traces"][0]["notes"])
    EXPECT_FALSE(note.get<std::string>().starts_with("recorder cost")) << note;
}

// Without stacks the note counts every event and no stack (none was taken, and none timed).
TEST_F(FrameworkBlocks, WithoutStacksTheCostNoteCountsNoStack) {
  const ProcessResult run =
      run_traced("workload_cached_training", {"60"},
                 {{"GPUMEMTRACE_SELF_TIME", "1"}, {"GPUMEMTRACE_STACKS", "none"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  last_output_ = run.out;
  const std::string trace = only_trace();
  const int segments = printed(last_output_, "segments");
  const long long blocks = static_cast<long long>(block_records(trace).size());
  const json r = command_json({"report", "--json", trace});
  std::string cost_note;
  for (const json& note : r["traces"][0]["notes"]) {
    if (note.get<std::string>().starts_with("recorder cost: ")) cost_note = note;
  }
  long long events = 0, total_ns = 0, stack_ns = 0, stacks = -1;
  ASSERT_EQ(std::sscanf(cost_note.c_str(),
                        "recorder cost: %lld events, %lld ns in the recorder, %lld ns of it taking "
                        "%lld stacks",
                        &events, &total_ns, &stack_ns, &stacks),
            4)
      << cost_note;
  EXPECT_EQ(events, blocks + segments);
  EXPECT_EQ(stacks, 0);
  EXPECT_EQ(stack_ns, 0);
}

// PyTorch's trace entries give the size asked for (4 bytes for a scalar, 3 MiB + 1000 for a kept
// activation), while its figures count the blocks: 512 bytes, the request rounded up, or a whole
// free block when what is left is not worth splitting. The analyzer rebuilds the blocks from the
// segments, so that every figure is the allocator's own.
TEST_F(FrameworkBlocks, PytorchsRequestSizesAreCountedAsItsBlocks) {
  const ProcessResult run =
      run_traced("workload_cached_training", {"60"}, {{"SIM_ALLOCATOR", "pytorch"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  const int64_t allocated = printed(run.out, "allocated");
  const int64_t reserved = printed(run.out, "reserved");
  const int64_t kept_bytes = printed(run.out, "kept_bytes");
  // The weights, the kept blocks, the scalar's 512 bytes and the unsplit request's 20 MiB.
  const int64_t mib = static_cast<int64_t>(kMiB);
  ASSERT_EQ(allocated, 24 * mib + kept_bytes + 512 + 20 * mib);

  // The trace holds what was asked for.
  int scalar = 0;
  int unsplit = 0;
  for (const json& line : block_records(trace)) {
    if (line["action"] != 0) continue;
    EXPECT_EQ(line["allocator"], 1);
    scalar += line["size"] == 4 ? 1 : 0;
    unsplit += line["size"] == 19 * kMiB + 600 * 1024 ? 1 : 0;
  }
  EXPECT_EQ(scalar, 1);
  EXPECT_EQ(unsplit, 1);

  const json r = report({trace});
  const json& d = device(r, 0);
  EXPECT_EQ(number(d, "views.at_exit.framework_allocated_bytes"), allocated);
  EXPECT_EQ(number(d, "views.at_exit.framework_reserved_bytes"), reserved);

  const json frame = command_json({"top", "--once", "--json", trace});
  const json& top_device = frame["processes"][0]["devices"][0];
  EXPECT_EQ(top_device["framework_allocated_bytes"], allocated) << top_device.dump();

  const json leaks = command_json({"leaks", trace, "--json"});
  bool found_kept = false;
  int64_t held = 0;
  std::vector<int64_t> held_at_end;  // the scalar's and the unsplit request's sites
  for (const json& g : leaks["leaks"]) {
    EXPECT_EQ(g["allocator"], "pytorch") << g.dump();
    if (g["level"] == "block") held += g["bytes"].get<int64_t>();
    if (g["class"] == "cached") {
      EXPECT_EQ(g["bytes"], reserved - allocated);
    }
    if (frame_of(g, "keep_activation") != nullptr) {
      found_kept = true;
      EXPECT_EQ(g["class"], "probable_leak");
      EXPECT_EQ(g["bytes"], kept_bytes);
      EXPECT_EQ(g["count"], printed(run.out, "kept_count"));
    }
    if (frame_of(g, "hold_scalar_and_unsplit_block") != nullptr) {
      held_at_end.push_back(g["bytes"].get<int64_t>());
    }
  }
  EXPECT_TRUE(found_kept) << leaks.dump(1);
  std::sort(held_at_end.begin(), held_at_end.end());
  EXPECT_EQ(held_at_end, (std::vector<int64_t>{512, 20 * mib}));
  EXPECT_EQ(held, allocated);
}

// The memviz export shows the allocator as PyTorch's own snapshot would: its segments, each tiled
// by its blocks (rebuilt from the sizes asked for) and the free space between them, and its block
// events in the device's trace instead of one block per segment.
TEST_F(FrameworkBlocks, MemvizHasTheAllocatorsBlocksInsideItsSegments) {
  const ProcessResult run =
      run_traced("workload_cached_training", {"60"}, {{"SIM_ALLOCATOR", "pytorch"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json snapshot = memviz_snapshot(only_trace());
  ASSERT_TRUE(snapshot.is_object());

  int64_t reserved = 0;
  int64_t allocated = 0;
  int64_t active_blocks = 0;
  std::vector<int64_t> smallest;  // blocks under 1 KiB: the scalar's
  for (const json& segment : snapshot["segments"]) {
    reserved += segment["total_size"].get<int64_t>();
    allocated += segment["allocated_size"].get<int64_t>();
    EXPECT_EQ(
        segment["segment_type"],
        segment["total_size"].get<int64_t>() <= 2 * static_cast<int64_t>(kMiB) ? "small" : "large");
    // The blocks tile the segment.
    uint64_t cursor = segment["address"];
    int64_t in_use = 0;
    for (const json& b : segment["blocks"]) {
      EXPECT_EQ(b["address"], cursor) << segment.dump();
      cursor += b["size"].get<uint64_t>();
      if (b["state"] == "active_allocated") {
        ++active_blocks;
        in_use += b["size"].get<int64_t>();
        EXPECT_GE(b["size"], b["requested_size"]);
        EXPECT_FALSE(b["frames"].empty());
        if (b["size"] < 1024) smallest.push_back(b["size"]);
      } else {
        EXPECT_EQ(b["state"], "inactive");
      }
    }
    EXPECT_EQ(cursor, segment["address"].get<uint64_t>() + segment["total_size"].get<uint64_t>());
    EXPECT_EQ(in_use, segment["allocated_size"]);
  }
  EXPECT_EQ(snapshot["segments"].size(), static_cast<std::size_t>(printed(run.out, "segments")));
  EXPECT_EQ(reserved, printed(run.out, "reserved"));
  EXPECT_EQ(allocated, printed(run.out, "allocated"));
  EXPECT_EQ(smallest, std::vector<int64_t>{512});
  // The weights, the kept activations, the scalar and the unsplit block.
  EXPECT_EQ(active_blocks, 1 + printed(run.out, "kept_count") + 2);

  // Per step: five blocks allocated, freed (requested, completed); the kept ones; the weights;
  // the two held at the end; the segments once each.
  std::map<std::string, int> actions;
  for (const json& e : snapshot["device_traces"][0]) ++actions[e["action"].get<std::string>()];
  const int allocs = 60 * 5 + static_cast<int>(printed(run.out, "kept_count")) + 1 + 2;
  EXPECT_EQ(actions["alloc"], allocs);
  EXPECT_EQ(actions["free_requested"], 60 * 5);
  EXPECT_EQ(actions["free_completed"], 60 * 5);
  EXPECT_EQ(actions["segment_alloc"], printed(run.out, "segments"));
  EXPECT_EQ(actions.size(), 4u);
}

// A trace of PyTorch's blocks with its allocator's settings (format 4.6), as the shim writes it
// with roundup_power2_divisions:4,max_split_size_mb:32: a request of 48 MiB + 1000 bytes rounds
// to 56 MiB and, at 32 MiB or more, is never split: it takes its whole 64 MiB free block; 3 MiB +
// 1000 bytes rounds to 3.5 MiB and is split off its 20 MiB segment. `leaks` and the memviz export
// both rebuild the blocks by those settings (without them: 48 MiB + 1024 and 3 MiB + 1024).
TEST_F(FrameworkBlocks, TheAllocatorsSettingsInTheTraceShapeItsBlocksInEveryReport) {
  constexpr uint64_t kBig = 0x7f0000000000, kSmall = 0x7f0010000000;
  const auto block = [](uint64_t t, format::BlockAction action, uint64_t address, uint64_t size) {
    format::BlockRecord r;
    r.time_ns = t;
    r.allocator = static_cast<uint32_t>(format::BlockAllocator::kPytorch);
    r.action = static_cast<uint32_t>(action);
    r.device = 0;
    r.address = address;
    r.size = size;
    return r;
  };
  format::ProcessInfoRecord process;
  process.pid = 77;
  process.argv = {"python", "train.py"};
  format::AllocatorSettingsRecord settings;
  settings.time_ns = 1;
  settings.allocator = static_cast<uint32_t>(format::BlockAllocator::kPytorch);
  settings.max_split_size = 32 * kMiB;
  settings.roundup_divisions.assign(format::AllocatorSettingsRecord::kIntervals, 4);
  using A = format::BlockAction;
  ChunkedFile file;
  file.add_chunk_of(
      0, 0, 1000,
      {process, settings, alloc_at(2, 0, kBig, 64 * kMiB),
       block(3, A::kSegmentAlloc, kBig, 64 * kMiB), block(4, A::kAlloc, kBig, 48 * kMiB + 1000),
       alloc_at(5, 0, kSmall, 20 * kMiB), block(6, A::kSegmentAlloc, kSmall, 20 * kMiB),
       block(7, A::kAlloc, kSmall, 3 * kMiB + 1000)});
  const std::string trace = dir_ + "/settings.gmt";
  {
    std::FILE* f = std::fopen(trace.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(file.bytes().data(), 1, file.bytes().size(), f), file.bytes().size());
    std::fclose(f);
  }

  // Both blocks were made at one site (no stack): one group.
  const json leaks = command_json({"leaks", "--json", trace});
  int64_t leaked = 0, count = 0;
  for (const json& g : leaks["leaks"]) {
    if (g.value("allocator", "") != "pytorch" || g.value("level", "") != "block") continue;
    leaked += g["bytes"].get<int64_t>();
    count += g["count"].get<int64_t>();
  }
  EXPECT_EQ(leaked, 64 * static_cast<int64_t>(kMiB) + 7 * static_cast<int64_t>(kMiB) / 2)
      << leaks.dump(1);
  EXPECT_EQ(count, 2);

  const json snapshot = memviz_snapshot(trace);
  ASSERT_TRUE(snapshot.is_object());
  std::map<uint64_t, std::vector<std::pair<std::string, int64_t>>> tiles;  // by segment
  for (const json& segment : snapshot["segments"]) {
    for (const json& b : segment["blocks"])
      tiles[segment["address"]].emplace_back(b["state"], b["size"]);
  }
  using Tiles = std::vector<std::pair<std::string, int64_t>>;
  EXPECT_EQ(tiles[kBig], (Tiles{{"active_allocated", 64 * kMiB}})) << snapshot["segments"].dump();
  EXPECT_EQ(tiles[kSmall],
            (Tiles{{"active_allocated", 7 * kMiB / 2}, {"inactive", 33 * kMiB / 2}}));
}

// At the peak, the allocator's blocks by the line that asked for them and its free cache, not
// the segments by the line that grew the cache; the rows add up to the peak.
TEST_F(FrameworkBlocks, ThePeakIsTheBlocksBySiteAndTheCache) {
  const std::string trace = traced_training();
  const int64_t reserved = printed(last_output_, "reserved");
  const json peak = command_json({"peak", trace, "--json", "--top", "1000"});
  ASSERT_EQ(peak["devices"].size(), 1u);
  const json& d = peak["devices"][0];
  // The allocator never gives a segment back: its segments are the peak.
  EXPECT_EQ(d["peak_bytes"], reserved);
  int64_t total = 0;
  int caches = 0;
  const json* weights = nullptr;
  for (const json& g : d["groups"]) {
    total += g["bytes"].get<int64_t>();
    ASSERT_EQ(g["allocator"], "other") << g.dump();  // no driver row is left
    if (g["level"] == "cache") {
      ++caches;
      EXPECT_EQ(g["stack"], 0);
      EXPECT_TRUE(g["frames"].empty());
    } else {
      EXPECT_EQ(g["level"], "block");
      if (frame_of(g, "main") != nullptr && frame_of(g, "step") == nullptr) weights = &g;
    }
  }
  EXPECT_EQ(caches, 1);
  EXPECT_EQ(total, reserved);
  ASSERT_NE(weights, nullptr) << d.dump(1);
  EXPECT_EQ((*weights)["bytes"], 24 * static_cast<int64_t>(kMiB));
  EXPECT_EQ((*weights)["count"], 1);

  // The report's peak sites are the same rows.
  const json r = report({trace});
  const json& sites = device(r, 0)["peak_sites"];
  ASSERT_FALSE(sites.empty());
  int64_t report_caches = 0;
  for (const json& s : sites) {
    EXPECT_EQ(s["allocator"], "other");
    if (s["level"] == "cache") ++report_caches;
  }
  EXPECT_EQ(report_caches, 1);

  const ProcessResult text = cli({"peak", trace});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("(other cache: free)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(other blocks)"), std::string::npos) << text.out;
}

// Five 4 MiB blocks in one 20 MiB segment, two freed apart, and 6 MiB asked for with room for
// no second segment: the allocator's OOM, with 8 MiB free in its cache in two 4 MiB holes.
TEST_F(FrameworkBlocks, AnOomInAFragmentedCacheSaysSo) {
  const ProcessResult run =
      run_traced("workload_cached_training", {"fragment"},
                 {{"FAKECUDA_DEVICE_MEMORY", "33554432"}, {"FAKECUDA_CONTEXT_OVERHEAD", "0"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(printed(run.out, "oom"), 1) << run.out;
  ASSERT_EQ(printed(run.out, "allocated"), 12 * static_cast<int64_t>(kMiB));
  ASSERT_EQ(printed(run.out, "reserved"), 20 * static_cast<int64_t>(kMiB));
  const std::string trace = only_trace();
  const json oom = command_json({"oom", trace, "--json"});
  ASSERT_EQ(oom["ooms"].size(), 1u) << oom.dump(1);
  const json& f = oom["ooms"][0];
  EXPECT_EQ(f["requested_bytes"], 20 * static_cast<int64_t>(kMiB));  // the segment
  EXPECT_EQ(f["allocator"], "other");
  EXPECT_EQ(f["allocator_requested_bytes"], 6 * static_cast<int64_t>(kMiB));
  EXPECT_EQ(f["cache_free_bytes"], 8 * static_cast<int64_t>(kMiB));
  EXPECT_EQ(f["largest_free_block_bytes"], 4 * static_cast<int64_t>(kMiB));
  EXPECT_EQ(f["fragmentation"], true);
  const json& holders = f["holders"];
  ASSERT_EQ(holders.size(), 2u) << holders.dump(1);
  EXPECT_EQ(holders[0]["level"], "block");
  EXPECT_EQ(holders[0]["bytes"], 12 * static_cast<int64_t>(kMiB));
  EXPECT_EQ(holders[0]["count"], 3);
  EXPECT_NE(frame_of(holders[0], "fragment_block"), nullptr) << holders[0].dump(1);
  EXPECT_EQ(holders[1]["level"], "cache");
  EXPECT_EQ(holders[1]["bytes"], 8 * static_cast<int64_t>(kMiB));
  EXPECT_EQ(holders[1]["count"], 1);

  const ProcessResult text = cli({"oom", trace});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("fragmentation: the cache held 8.00 MiB free, but its largest free "
                          "block was 4.00 MiB"),
            std::string::npos)
      << text.out;

  // The timeline has the allocator's figures: at most 20 MiB held (the five blocks), of the
  // 20 MiB reserved to the end; never more held than reserved.
  const json timeline = command_json({"timeline", trace, "--format", "json"});
  const json& td = timeline["devices"][0];
  ASSERT_TRUE(td.contains("framework_allocated")) << td.dump();
  const std::vector<int64_t> allocated = td["framework_allocated"];
  const std::vector<int64_t> reserved_series = td["framework_reserved"];
  ASSERT_EQ(allocated.size(), td["resident"].size());
  ASSERT_EQ(reserved_series.size(), allocated.size());
  EXPECT_EQ(*std::max_element(allocated.begin(), allocated.end()), 20 * static_cast<int64_t>(kMiB));
  EXPECT_EQ(reserved_series.back(), 20 * static_cast<int64_t>(kMiB));
  for (std::size_t b = 0; b < allocated.size(); ++b) EXPECT_LE(allocated[b], reserved_series[b]);
  const ProcessResult csv = cli({"timeline", trace, "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out.substr(0, csv.out.find('\n')),
            "time_ns,device,resident,device_bytes,framework_allocated,framework_reserved");
}

// What the allocator holds free has no stack: `leaks` names it as the allocator's cache, never as
// an allocation of unknown origin, in text, JSON and the leak flame graph.
TEST_F(FrameworkBlocks, TheFreeCacheIsNamedAsTheAllocatorsCache) {
  const std::string trace = traced_training();
  const int64_t cache = printed(last_output_, "reserved") - printed(last_output_, "allocated");
  const ProcessResult text = cli({"leaks", trace});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out.find("unknown"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("(no stack recorded)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  cached  device 0  (other cache: free)\n"), std::string::npos)
      << text.out;

  const json leaks = command_json({"leaks", trace, "--json"});
  int caches = 0;
  for (const json& g : leaks["leaks"]) {
    if (g["level"] != "cache") continue;
    ++caches;
    EXPECT_EQ(g["library"], "other");
    EXPECT_TRUE(g["frames"].empty());
  }
  EXPECT_EQ(caches, 1);

  const ProcessResult folded =
      cli({"export", trace, "--format", "folded", "--what", "leaks", "-o", "-"});
  ASSERT_EQ(folded.exit_code, 0) << folded.err;
  EXPECT_NE(folded.out.find("device 0;cached;(other cache: free) " + std::to_string(cache) + "\n"),
            std::string::npos)
      << folded.out;
}

// A folded line's frames carry their lines: the loop's three call sites in step() (its
// activations, its scratch block, keep_activation()) stay three lines of the flame graph.
TEST_F(FrameworkBlocks, FoldedStacksKeepCallSitesApartByLine) {
  const std::string trace = traced_training();
  const ProcessResult folded = cli({"export", trace, "--format", "folded", "-o", "-"});
  ASSERT_EQ(folded.exit_code, 0) << folded.err;
  std::set<std::string> step_sites;
  std::size_t at = 0;
  while ((at = folded.out.find("training::step(", at)) != std::string::npos) {
    const std::size_t end = folded.out.find_first_of(";\n ", folded.out.find(") (", at) + 3);
    step_sites.insert(folded.out.substr(at, end - at));
    at = end;
  }
  EXPECT_EQ(step_sites.size(), 3u) << folded.out;
  for (const std::string& site : step_sites)
    EXPECT_NE(site.find(" (cached_training.cpp:"), std::string::npos) << site;
}

// PyTorch's way with a request that does not fit: cudaMalloc fails, the allocator gives its
// free segments back (here a 2 MiB one) and asks again, which fails too, then records its OOM.
// One failure everywhere, its retry folded into it, with the allocator's figures.
TEST_F(FrameworkBlocks, AnOomRetriedAfterTheCacheWasReleasedIsListedOnce) {
  const ProcessResult run = run_traced("workload_cached_training", {"fragment"},
                                       {{"SIM_ALLOCATOR", "pytorch"},
                                        {"FAKECUDA_DEVICE_MEMORY", "33554432"},
                                        {"FAKECUDA_CONTEXT_OVERHEAD", "0"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(printed(run.out, "oom"), 1) << run.out;
  const int64_t mib = static_cast<int64_t>(kMiB);
  ASSERT_EQ(printed(run.out, "released"), 2 * mib);
  const std::string trace = only_trace();
  // The trace holds both failed calls.
  EXPECT_EQ(records(trace, "alloc_failed").size(), 2u);

  const json oom = command_json({"oom", trace, "--json"});
  EXPECT_EQ(oom["failed_allocations"], 1);
  ASSERT_EQ(oom["ooms"].size(), 1u) << oom.dump(1);
  const json& f = oom["ooms"][0];
  EXPECT_EQ(f["requested_bytes"], 20 * mib);
  EXPECT_EQ(f["live_bytes"], 20 * mib);  // after the release
  ASSERT_EQ(f["retries"].size(), 1u) << f.dump(1);
  EXPECT_EQ(f["retries"][0]["released_bytes"], 2 * mib);
  EXPECT_EQ(f["retries"][0]["error"], 2);
  EXPECT_GE(f["retries"][0]["time_ns"].get<int64_t>(), f["time_ns"].get<int64_t>());
  EXPECT_EQ(f["allocator"], "pytorch");
  EXPECT_EQ(f["allocator_requested_bytes"], 6 * mib);
  EXPECT_EQ(f["cache_free_bytes"], 8 * mib);
  EXPECT_EQ(f["largest_free_block_bytes"], 4 * mib);
  EXPECT_EQ(f["fragmentation"], true);

  const ProcessResult text = cli({"oom", trace});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out.find("1 failed allocation in "), 0u) << text.out;
  EXPECT_NE(text.out.find("    retried once after the allocator released 2.00 MiB\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("fragmentation: the cache held 8.00 MiB free, but its largest free "
                          "block was 4.00 MiB"),
            std::string::npos)
      << text.out;

  const json r = report({trace});
  EXPECT_EQ(number(device(r, 0), "failed_alloc_count"), 1);
  ASSERT_EQ(r["ooms"].size(), 1u) << r["ooms"].dump(1);
  EXPECT_EQ(r["ooms"][0]["retries"].size(), 1u);
  EXPECT_EQ(r["ooms"][0]["fragmentation"], true);
  const ProcessResult report_text = cli({"report", trace});
  EXPECT_NE(report_text.out.find(", failed 1 (gpumemtrace oom)\n"), std::string::npos)
      << report_text.out;

  const ProcessResult check = cli({"check", trace, "--no-oom"});
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_EQ(check.out, "FAIL: 1 allocation failed (--no-oom)\n");

  // A summary keeps the retries.
  const std::string summary = dir_ + "/summary.json";
  ASSERT_EQ(cli({"summarize", trace, "-o", summary}).exit_code, 0);
  const json from_summary = report({summary});
  ASSERT_EQ(from_summary["ooms"].size(), 1u);
  EXPECT_EQ(from_summary["ooms"][0]["retries"], r["ooms"][0]["retries"]);
}

// The seed's scenario (x = a 1 GiB tensor, y = x * 2, del x) as PyTorch records it: each
// segment's driver allocation before the allocator's segment and block events for the same
// request. The peak is the moment of y's whole request: the views there say what torch's max
// allocated and max reserved say (2 GiB each), and nothing outside the framework, with the
// sampler on (it reads the views between y's segment and its block) or off.
TEST_F(FrameworkBlocks, TheViewsAtThePeakCountTheRequestThatReachedIt) {
  for (const char* sample_ms : {"50", "0"}) {
    SCOPED_TRACE(std::string("GPUMEMTRACE_SAMPLE_MS=") + sample_ms);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    const ProcessResult run =
        run_traced("workload_cached_training", {"seed"},
                   {{"SIM_ALLOCATOR", "pytorch"}, {"GPUMEMTRACE_SAMPLE_MS", sample_ms}});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const int64_t gib = 1024 * static_cast<int64_t>(kMiB);
    ASSERT_EQ(printed(run.out, "max_allocated"), 2 * gib);
    ASSERT_EQ(printed(run.out, "max_reserved"), 2 * gib);
    const std::string trace = only_trace();

    const json r = report({trace});
    const json& d = device(r, 0);
    EXPECT_EQ(number(d, "peak_bytes"), 2 * gib);
    EXPECT_EQ(number(d, "views.at_peak.framework_allocated_bytes"), 2 * gib) << d["views"].dump(1);
    EXPECT_EQ(number(d, "views.at_peak.framework_reserved_bytes"), 2 * gib);
    EXPECT_EQ(number(d, "views.at_peak.tracked_bytes"), 2 * gib);
    EXPECT_EQ(number(d, "views.at_peak.outside_framework_bytes"), 0);
    EXPECT_EQ(number(d, "views.at_peak.framework_cache_bytes"), 0);
    EXPECT_EQ(d["views"]["at_peak"]["by_library"], (json{{"libgmt_caching_allocator", 2 * gib}}))
        << d["views"]["at_peak"].dump(1);

    const ProcessResult text = cli({"report", trace});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_EQ(views_row(text.out, "views at the peak", "framework allocated"), "2.00 GiB")
        << text.out;
    EXPECT_EQ(views_row(text.out, "views at the peak", "framework reserved"), "2.00 GiB");
    EXPECT_EQ(views_row(text.out, "views at the peak", "  outside the framework"), "0 B");

    // Perfetto's peak instant carries the same figures.
    const std::string perfetto = dir_ + "/trace.json";
    const ProcessResult exported = cli({"export", trace, "--format", "perfetto", "-o", perfetto});
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    const json events = json::parse(read_file(perfetto))["traceEvents"];
    int peaks = 0;
    for (const json& e : events) {
      if (e.value("cat", "") != "peak") continue;
      ++peaks;
      EXPECT_EQ(e["args"]["bytes"], 2 * gib);
      EXPECT_EQ(e["args"]["framework_allocated_bytes"], 2 * gib) << e.dump();
      EXPECT_EQ(e["args"]["framework_reserved_bytes"], 2 * gib) << e.dump();
    }
    EXPECT_EQ(peaks, 1);
  }
}

}  // namespace
}  // namespace gmt::test
