// SPDX-License-Identifier: Apache-2.0
// The flame graph of the peak, past its node limit: what it leaves out of a node is grouped by
// the line that allocated it before anything falls into "(smaller stacks)". The phases
// workload's peak (218 MiB: 100 MiB of activations at one call of must_alloc, 64 MiB of weights
// and 50 MiB of gradients at two others, and a few smaller) with room for two nodes: the device
// and its largest child are drawn, and the rest is one group at must_alloc's cudaMalloc line.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "analyzer/html/page_data.h"
#include "analyzer/report/report.h"
#include "tests/integration/analysis/html_report_fixture.h"

using nlohmann::json;

namespace gmt::test {
namespace {

class HtmlFlameGroups : public HtmlReportRun {};

TEST_F(HtmlFlameGroups, WhatTheFlameGraphLeavesOutIsGroupedByItsAllocatingLine) {
  const ProcessResult run = run_phases();
  ASSERT_EQ(run.exit_code, 0) << run.err;
  analyzer::ReportInput input = analyzer::load_traces({only_trace()}, 1);
  ASSERT_EQ(input.traces.size(), 1u);
  analyzer::HtmlLimits limits;
  limits.flame_nodes = 2;
  const json data = json::parse(analyzer::html_report_data(input, limits, 1).dump());
  const json& device = data["traces"][0]["devices"][0];
  const uint64_t peak = device["peak_bytes"];
  ASSERT_EQ(peak, 218 * kMiB);
  const json& flame = device["flame"];
  std::map<std::string, std::pair<uint64_t, std::string>> children;  // of the root
  for (const json& node : flame) {
    if (node[0] == 0) children[node[2]] = {node[1], node[3]};
  }
  const std::string source = std::string(GMT_WORKLOAD_SOURCE_DIR) + "/phases_nvtx.cpp";
  std::ifstream in(source);
  int line = 0, number = 0;
  for (std::string text; std::getline(in, text);) {
    ++number;
    if (line == 0 && text.find("cudaMalloc(&p, bytes)") != std::string::npos) line = number;
  }
  ASSERT_EQ(children.size(), 2u) << flame.dump();
  EXPECT_EQ(children.count("(smaller stacks)"), 0u) << flame.dump();
  const auto group = children.find("(stacks at) (anonymous namespace)::must_alloc(unsigned long)");
  ASSERT_NE(group, children.end()) << flame.dump();
  EXPECT_EQ(group->second.first, peak - 100 * kMiB);
  EXPECT_TRUE(group->second.second.ends_with("phases_nvtx.cpp:" + std::to_string(line)))
      << group->second.second;
  uint64_t sum = 0;
  for (const auto& [name, child] : children) sum += child.first;
  EXPECT_EQ(sum, peak);
}

}  // namespace
}  // namespace gmt::test
