// SPDX-License-Identifier: Apache-2.0
// The page's allocation-level views in headless Chromium (html_page_probe.py drives it): every
// allocation over time (a hover over a known block shows its exact size and line, a click its
// life), the caching allocator's segments at the fragmentation OOM (the largest free piece and
// the request) and at the peak (the report's roles and cache), memory per step, and the time
// axis starting at the first allocation. Every page loads with no JavaScript error, and its
// figures are `report --json`'s.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <set>
#include <sstream>
#include <vector>

#include "tests/integration/analysis/html_page_probe_run.h"

using nlohmann::json;

namespace gmt::test {
namespace {

// The number of the first line of `file` that contains `text`; 0 when none does.
int line_of(const std::string& file, const std::string& text) {
  std::ifstream in(file);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.find(text) != std::string::npos) return number;
  }
  return 0;
}

// The allocation view of the first device.
constexpr const char* kBands = "window.gmtReport.allocations[0]";

class HtmlAllocations : public HtmlPageProbe {};

// The phases workload: a hover over its first step's 100 MiB activations (made by must_alloc's
// cudaMalloc, called from main's forward; bands are in the order they were made) shows 100 MiB to
// the byte, the line that allocated it and the caller's line; a click shows its life: the phases it
// was made in and the step.
TEST_F(HtmlAllocations, AHoverOverAKnownBlockShowsItsExactSizeAndLine) {
  const ProcessResult run = run_phases();
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  const std::string page = html({trace});
  const json data = embedded_data(read_file(page));
  const json& bands = data["traces"][0]["devices"][0]["allocations"]["bands"];
  std::size_t index = bands["size"].size();
  for (std::size_t i = 0; i < bands["size"].size(); ++i) {
    if (bands["size"][i] == 100 * kMiB && index == bands["size"].size()) index = i;
  }
  ASSERT_LT(index, bands["size"].size()) << bands.dump();
  const std::string i = std::to_string(index);
  const json seen = probe(
      page, json::array({
                // Zoomed to its life and a third of it on each side: it is drawn whole in the
                // middle third, however short it was.
                {{"move", std::string("(() => { const a = ") + kBands + "; const i = " + i +
                              "; const life = a.end[i] - a.start[i];"
                              " a.zoom(a.start[i] - life, a.end[i] + life);"
                              " a.root.scrollIntoView(); return a.where(i); })()"}},
                {{"eval", "document.querySelector('.band-tip').textContent"}},
                {{"eval", "Number(document.querySelector('.band-tip .tip-bytes').dataset.bytes)"}},
                {{"click", std::string(kBands) + ".where(" + i + ")"}},
                {{"eval", "document.querySelector('.life').textContent"}},
                {{"eval", std::string("(() => { const a = ") + kBands +
                              "; a.zoom(a.full[0], a.full[1]);"
                              " return Number(a.root.dataset.drawnMaxBytes); })()"}},
            }));
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  ASSERT_FALSE(seen.is_null());
  EXPECT_EQ(seen["errors"], json::array()) << seen["errors"].dump(2);
  const json& r = seen["results"];
  ASSERT_FALSE(r[0].is_null()) << "the 100 MiB band is not drawn";
  const std::string source = std::string(GMT_WORKLOAD_SOURCE_DIR) + "/phases_nvtx.cpp";
  const std::string allocating =
      "phases_nvtx.cpp:" + std::to_string(line_of(source, "cudaMalloc(&p, bytes)"));
  const std::string caller =
      "phases_nvtx.cpp:" + std::to_string(line_of(source, "must_alloc(100 * kMiB)"));
  const std::string tip = r[1];
  EXPECT_NE(tip.find("100 MiB (104857600 bytes) \u00b7 one allocation"), std::string::npos) << tip;
  EXPECT_NE(tip.find(allocating), std::string::npos) << tip;
  EXPECT_NE(tip.find("main "), std::string::npos) << tip;
  EXPECT_NE(tip.find(caller), std::string::npos) << tip;
  EXPECT_EQ(r[2], 100 * kMiB);
  const std::string life = r[4];
  EXPECT_EQ(life.rfind("100 MiB (104857600 bytes), unknown \u00b7 workload_phases \u00b7 ", 0), 0u)
      << life;
  EXPECT_NE(life.find("in trainer::step > forward \u00b7 made in step 1 of trainer::step"),
            std::string::npos)
      << life;
  EXPECT_NE(life.find(caller), std::string::npos) << life;
  // The tallest stack of bands, the whole trace in view, is the model's peak.
  const json rep = report({trace});
  EXPECT_EQ(r[5], rep["devices"][0]["peak_bytes"]);
}

// The fragmentation OOM (workload_cached_training fragment): five 4 MiB blocks in one 20 MiB
// segment, the second and fourth freed, 6 MiB asked for. The segments view opens at the
// failure: the largest free piece (4 MiB, outlined) and the request (6 MiB) beside it, as
// `report --json` gives them; a click on the failure's marker shows the same moment, and one
// on the peak's marker the segment full of blocks.
TEST_F(HtmlAllocations, TheSegmentsAtTheFragmentationOomShowTheLargestFreePieceAndTheRequest) {
  const ProcessResult run =
      run_traced("workload_cached_training", {"fragment"},
                 {{"FAKECUDA_DEVICE_MEMORY", "33554432"}, {"FAKECUDA_CONTEXT_OVERHEAD", "0"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  const std::string page = html({trace});
  const json rep = report({trace});
  ASSERT_EQ(rep["ooms"].size(), 1u) << rep.dump();
  const json& oom = rep["ooms"][0];
  ASSERT_EQ(oom["largest_free_block_bytes"], 4 * kMiB);
  ASSERT_EQ(oom["allocator_requested_bytes"], 6 * kMiB);
  const std::string segments = R"((() => {
    const s = document.querySelector('.segments');
    const largest = s.querySelector('.piece.largest');
    return {kind: s.dataset.kind, time_ns: Number(s.dataset.timeNs),
            largest_free: Number(s.dataset.largestFreeBytes),
            request: Number(s.dataset.requestBytes),
            summary: s.querySelector('.segment-summary').textContent,
            outlined: largest ? Number(largest.dataset.bytes) : null,
            request_bar: s.querySelectorAll('.request-bar').length,
            blocks: s.querySelectorAll('.piece:not(.free)').length,
            free: s.querySelectorAll('.piece.free').length};
  })())";
  const std::string marker = R"((() => {
    const c = window.gmtReport.charts[0];
    c.root.scrollIntoView();
    const r = c.overlay.getBoundingClientRect();
    const t = WHICH;
    return {x: r.left + c.xOf(t), y: r.top + r.height / 2};
  })())";
  const auto at = [&marker](const std::string& which) {
    std::string s = marker;
    s.replace(s.find("WHICH"), 5, which);
    return s;
  };
  const json seen = probe(
      page,
      json::array({{{"eval", segments}},
                   {{"click", at("c.device.peak_time_ns")}},
                   {{"eval", segments}},
                   {{"click", at("c.ooms[0].time_ns")}},
                   {{"eval", segments}},
                   {{"eval", std::string("Number(") + kBands + ".root.dataset.drawnMaxBytes)"}}}));
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  ASSERT_FALSE(seen.is_null());
  EXPECT_EQ(seen["errors"], json::array()) << seen["errors"].dump(2);
  const json& r = seen["results"];
  for (const std::size_t i : {0u, 4u}) {
    const json& s = r[i];
    EXPECT_EQ(s["kind"], "failure") << i;
    EXPECT_EQ(s["time_ns"], oom["time_ns"]) << i;
    EXPECT_EQ(s["largest_free"], oom["largest_free_block_bytes"]) << i;
    EXPECT_EQ(s["request"], oom["allocator_requested_bytes"]) << i;
    EXPECT_EQ(s["outlined"], 4 * kMiB) << i;
    EXPECT_EQ(s["request_bar"], 1) << i;
    EXPECT_EQ(s["blocks"], 3) << i;
    EXPECT_EQ(s["free"], 2) << i;
    EXPECT_EQ(s["summary"],
              "1 segment, 20.0 MiB reserved, 8.00 MiB of it free; largest free piece 4.00 MiB "
              "\u00b7 the request: 6.00 MiB \u2014 fragmentation: enough bytes are free, but in no "
              "one piece")
        << i;
  }
  // At the peak the segment is full: five blocks, nothing free, no request.
  const json& peak = r[2];
  EXPECT_EQ(peak["kind"], "peak");
  EXPECT_EQ(peak["largest_free"], 0);
  EXPECT_EQ(peak["blocks"], 5);
  EXPECT_EQ(peak["free"], 0);
  EXPECT_EQ(peak["request_bar"], 0);
  EXPECT_EQ(r[5], rep["devices"][0]["peak_bytes"]);
}

// Steps: the phases workload runs trainer::step three times; the steps view finds them (the
// phase `report --json` counts three calls of) and the page's time axis starts at the first
// allocation, with start-up folded.
TEST_F(HtmlAllocations, StepsAreThePhasesRunsAndTheAxisStartsAtTheFirstAllocation) {
  const ProcessResult run = run_phases();
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  const std::string page = html({trace});
  const json data = embedded_data(read_file(page));
  const json& device = data["traces"][0]["devices"][0];
  const json rep = report({trace});
  uint64_t calls = 0;
  for (const json& p : rep["phases"]) {
    if (p["name"] == "trainer::step") calls = p["calls"];
  }
  ASSERT_EQ(calls, 3u) << rep["phases"].dump();
  const json seen =
      probe(page, json::array({
                      {{"eval", "document.querySelector('.steps').dataset.step"}},
                      {{"eval", "Number(document.querySelector('.steps').dataset.steps)"}},
                      {{"eval", "document.querySelectorAll('.steps tr[data-step]').length"}},
                      {{"eval", "Number(document.querySelector('.chart').dataset.axisStartNs)"}},
                      {{"eval", "window.gmtReport.charts[0].full[1]"}},
                  }));
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  ASSERT_FALSE(seen.is_null());
  EXPECT_EQ(seen["errors"], json::array()) << seen["errors"].dump(2);
  const json& r = seen["results"];
  EXPECT_EQ(r[0], "trainer::step");
  EXPECT_EQ(r[1], calls);
  EXPECT_EQ(r[2], calls);
  const uint64_t res = device["timeline"]["resolution_ns"];
  const uint64_t first = device["allocations"]["first_alloc_ns"];
  EXPECT_GT(first, 0u);
  EXPECT_LE(first, device["peak_time_ns"].get<uint64_t>());
  EXPECT_EQ(r[3], first / res * res);
}

}  // namespace
}  // namespace gmt::test

namespace gmt::test {
namespace {

// The roles workload (two training steps of a two-layer model behind a caching allocator that
// reports as PyTorch's does, with the roles hooks' scopes and tags): the segments at the peak
// hold the blocks of each role that `report --json` counts at the peak, and their free pieces
// are its framework cache; the steps view offers the optimizer's two steps first.
TEST_F(HtmlAllocations, TheSegmentsAtThePeakAreTheReportsRolesAndCache) {
  const ProcessResult run = run_traced("workload_roles_training", {});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  const std::string page = html({trace});
  const json data = embedded_data(read_file(page));
  const json rep = report({trace});
  const json& at_peak = rep["devices"][0]["views"]["at_peak"];
  const json* peak = nullptr;
  for (const json& s : data["traces"][0]["devices"][0]["allocations"]["snapshots"]) {
    if (s["kind"] == "peak") peak = &s;
  }
  ASSERT_NE(peak, nullptr);
  uint64_t reserved = 0;
  std::map<std::string, uint64_t> by_role;
  for (const json& segment : (*peak)["segments"]) {
    reserved += segment["size"].get<uint64_t>();
    for (const json& piece : segment["pieces"]) {
      if (piece.size() == 4) by_role[piece[3]] += piece[1].get<uint64_t>();
    }
  }
  EXPECT_EQ(reserved, at_peak["framework_reserved_bytes"]);
  EXPECT_EQ((*peak)["free_bytes"], at_peak["framework_cache_bytes"]);
  std::map<std::string, uint64_t> expected;
  for (const json& r : rep["devices"][0]["by_role"]["at_peak"]) {
    if (r["bytes"] > 0 && r["role"] != "allocator_cache") expected[r["role"]] = r["bytes"];
  }
  EXPECT_EQ(by_role, expected);
  // Where the allocator handed out the most (PyTorch's max_memory_allocated, as whatif's
  // recording counts it: 46 MiB), its segments hold that in blocks; the page opens there.
  const json* highest = nullptr;
  for (const json& s : data["traces"][0]["devices"][0]["allocations"]["snapshots"]) {
    if (s["kind"] == "highest_allocated") highest = &s;
  }
  ASSERT_NE(highest, nullptr);
  uint64_t handed_out = 0;
  for (const json& segment : (*highest)["segments"]) {
    for (const json& piece : segment["pieces"]) {
      if (piece.size() == 4) handed_out += piece[1].get<uint64_t>();
    }
  }
  const ProcessResult whatif = cli({"whatif", "--json", trace});
  ASSERT_EQ(whatif.exit_code, 0) << whatif.err;
  EXPECT_EQ(
      handed_out,
      json::parse(whatif.out)["devices"][0]["recorded"]["max_allocated_bytes"].get<uint64_t>());
  EXPECT_EQ(handed_out, 46u << 20);
  // The first step's forward is reported module by module: its activations name theirs.
  const json& t = data["traces"][0];
  const json& bands = t["devices"][0]["allocations"]["bands"];
  std::set<std::string> activation_modules;
  std::size_t fc1 = bands["size"].size();
  for (std::size_t i = 0; i < bands["size"].size(); ++i) {
    const std::string role = t["devices"][0]["allocations"]["roles"][bands["role"][i].get<int>()];
    const std::string module = t["allocation_modules"][bands["module"][i].get<std::size_t>()];
    if (role != "activation") continue;
    activation_modules.insert(module);
    if (module == "fc1" && fc1 == bands["size"].size()) fc1 = i;
  }
  EXPECT_TRUE(activation_modules.contains("fc1") && activation_modules.contains("fc2"))
      << bands.dump();
  ASSERT_LT(fc1, bands["size"].size());
  const std::string i = std::to_string(fc1);
  const json seen =
      probe(page, json::array({
                      {{"eval", "document.querySelector('.steps').dataset.step"}},
                      {{"eval", "Number(document.querySelector('.steps').dataset.steps)"}},
                      {{"eval", R"((() => {
                                      const s = document.querySelector('.segments');
                                      const menu = s.querySelector('select');
                                      const peak = [...menu.options].findIndex((o) => o.text.startsWith('the peak'));
                                      menu.selectedIndex = peak;
                                      menu.dispatchEvent(new Event('change'));
                                      return s.querySelector('.segment-summary').textContent;
                                    })())"}},
                      {{"move", std::string("(() => { const a = window.gmtReport.allocations[0];") +
                                    " const i = " + i + "; const life = a.end[i] - a.start[i];" +
                                    " a.zoom(a.start[i] - life, a.end[i] + life);" +
                                    " a.root.scrollIntoView(); return a.where(i); })()"}},
                      {{"eval", "document.querySelector('.band-tip .tip-role').textContent"}},
                  }));
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  ASSERT_FALSE(seen.is_null());
  EXPECT_EQ(seen["errors"], json::array()) << seen["errors"].dump(2);
  const json& r = seen["results"];
  EXPECT_EQ(r[0], "optimizer step (AdamW)");
  EXPECT_EQ(r[1], 2);
  EXPECT_EQ(r[2],
            "4 segments, 62.0 MiB reserved, 16.0 MiB of it free; largest free piece 6.00 MiB");
  ASSERT_FALSE(r[3].is_null()) << "the band is not drawn";
  EXPECT_EQ(r[4], "role activation \u00b7 module fc1 \u00b7 pytorch");
}

}  // namespace
}  // namespace gmt::test

namespace gmt::test {
namespace {

// Remedies beside the failure (issue 51 item 4): the fragmentation OOM of an allocator that
// reports as PyTorch's does; the page carries `oom --json`'s remedies, and the segments view at
// the failure and the failure's panel list them.
TEST_F(HtmlAllocations, TheFailureShowsTheRemediesOomGives) {
  const ProcessResult run = run_traced("workload_cached_training", {"fragment"},
                                       {{"SIM_ALLOCATOR", "pytorch"},
                                        {"FAKECUDA_DEVICE_MEMORY", "33554432"},
                                        {"FAKECUDA_CONTEXT_OVERHEAD", "0"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string trace = only_trace();
  const std::string page = html({trace});
  const json data = embedded_data(read_file(page));
  const ProcessResult oom = cli({"oom", "--json", trace});
  ASSERT_EQ(oom.exit_code, 0) << oom.err;
  const json expected = json::parse(oom.out);
  ASSERT_EQ(expected["remedies"].size(), 1u) << expected.dump(1);
  EXPECT_EQ(data["traces"][0]["remedies"]["remedies"], expected["remedies"]);
  EXPECT_EQ(data["traces"][0]["remedies"]["remedies_note"], expected["remedies_note"]);
  const std::string rows =
      R"((selector) => [...document.querySelectorAll(selector + ' .remedies tr[data-change]')]
                                 .map((r) => [r.dataset.change, r.dataset.fits === 'true']))";
  const json seen = probe(page, json::array({{{"eval", "(" + rows + ")('.segments')"}},
                                             {{"click", R"((() => {
                           const c = window.gmtReport.charts[0];
                           c.root.scrollIntoView();
                           const r = c.overlay.getBoundingClientRect();
                           return {x: r.left + c.xOf(c.ooms[0].time_ns), y: r.top + r.height / 2};
                         })())"}},
                                             {{"eval", "(" + rows + ")('.moment')"}}}));
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  ASSERT_FALSE(seen.is_null());
  EXPECT_EQ(seen["errors"], json::array()) << seen["errors"].dump(2);
  const json want = json::array(
      {json::array({expected["remedies"][0]["change"], expected["remedies"][0]["fits"]})});
  EXPECT_EQ(seen["results"][0], want);
  EXPECT_EQ(seen["results"][2], want);
}

}  // namespace
}  // namespace gmt::test

namespace gmt::test {
namespace {

// The pages of the other cases the page's tests build, each loaded in Chromium: a run of two
// processes (one with a failed allocation), a bounded trace that dropped its history, and the
// cached training loop behind its allocator (leaks behind the cache). None logs a JavaScript
// error, and each draws its allocation view with the model's peak as its tallest stack.
TEST_F(HtmlAllocations, EveryOtherPageLoadsWithoutAJavaScriptError) {
  struct Case {
    std::string name;
    std::function<void()> run;
  };
  const std::vector<Case> cases = {
      {"processes",
       [this] {
         ASSERT_EQ(run_traced("workload_runtime_shared",
                              {"alloc:a:" + mib(1), "alloc:b:" + mib(4), "free:a",
                               "oom:" + mib(64 * 1024), "alloc:c:" + mib(2)})
                       .exit_code,
                   0);
         ASSERT_EQ(run_traced("workload_runtime_shared", {"alloc:a:" + mib(3), "free:a"}).exit_code,
                   0);
       }},
      {"bounded",
       [this] {
         ASSERT_EQ(run_traced("workload_cached_training", {"100000", "200"},
                              {{"GPUMEMTRACE_MAX_SIZE", "1MiB"}})
                       .exit_code,
                   0);
       }},
      {"cached",
       [this] { ASSERT_EQ(run_traced("workload_cached_training", {"30"}).exit_code, 0); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    c.run();
    const std::string page = html({dir_});
    const json rep = report({dir_});
    const json seen =
        probe(page, json::array({{{"eval", R"([...window.gmtReport.allocations].map((v) => {
      v.zoom(v.full[0], v.full[1]);
      return [v.trace.pid, v.device.device, Number(v.root.dataset.drawnMaxBytes)];
    }))"}}}));
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_FALSE(seen.is_null());
    EXPECT_EQ(seen["errors"], json::array()) << seen["errors"].dump(2);
    std::set<std::vector<uint64_t>> drawn, expected;
    for (const json& v : seen["results"][0]) drawn.insert(v.get<std::vector<uint64_t>>());
    for (const json& d : rep["devices"]) {
      if (d["peak_bytes"].get<uint64_t>() > 0)
        expected.insert({d["pid"].get<uint64_t>(), d["device"].get<uint64_t>(),
                         d["peak_bytes"].get<uint64_t>()});
    }
    EXPECT_EQ(drawn, expected);
  }
}

}  // namespace
}  // namespace gmt::test

namespace gmt::test {
namespace {

// The segments at any moment clicked: where every block is kept whole and every segment's life
// is known (the fragmentation workload), they follow from the data exactly: at the failure they
// are the pass's own snapshot, and just after the fifth block is handed out the segment is full.
TEST_F(HtmlAllocations, TheSegmentsAtAnyMomentFollowFromTheBlocksLives) {
  const ProcessResult run =
      run_traced("workload_cached_training", {"fragment"},
                 {{"FAKECUDA_DEVICE_MEMORY", "33554432"}, {"FAKECUDA_CONTEXT_OVERHEAD", "0"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string page = html({only_trace()});
  const json seen = probe(page, json::array({{{"eval", R"((() => {
    const t = window.gmtReport.data.traces[0];
    const d = t.devices[0];
    const key = (s) => JSON.stringify([s.free_bytes, s.largest_free_bytes,
      s.segments.map((g) => [g.address, g.size, g.allocator, g.expandable, g.pieces])]);
    const failure = d.allocations.snapshots.find((s) => s.kind === 'failure');
    const computed = gmt.Segments.at(t, d, failure.time_ns);
    return computed !== null && key(computed) === key(failure);
  })())"}},
                                             {{"eval", R"((() => {
    const d = window.gmtReport.data.traces[0].devices[0];
    const b = d.allocations.bands;
    const fifth = b.start[b.start.length - 1];
    const view = window.gmtReport.segments[0];
    view.showAt(fifth, null);
    const s = view.root;
    return {kind: s.dataset.kind, computed: s.querySelectorAll('.computed').length,
            largest_free: Number(s.dataset.largestFreeBytes),
            blocks: s.querySelectorAll('.piece:not(.free)').length,
            free: s.querySelectorAll('.piece.free').length,
            bands: b.start.length};
  })())"}}}));
  if (!skip_.empty()) GTEST_SKIP() << skip_;
  ASSERT_FALSE(seen.is_null());
  EXPECT_EQ(seen["errors"], json::array()) << seen["errors"].dump(2);
  const json& r = seen["results"];
  EXPECT_EQ(r[0], true);
  EXPECT_EQ(r[1]["bands"], 5) << r[1];
  EXPECT_EQ(r[1]["kind"], "moment");
  EXPECT_EQ(r[1]["computed"], 1);
  EXPECT_EQ(r[1]["largest_free"], 0);
  EXPECT_EQ(r[1]["blocks"], 5);
  EXPECT_EQ(r[1]["free"], 0);
}

}  // namespace
}  // namespace gmt::test
