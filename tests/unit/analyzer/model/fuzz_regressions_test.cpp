// SPDX-License-Identifier: Apache-2.0
// Inputs the fuzzer (tests/fuzz/trace_fuzzer.cpp) found to break the reader or the replay, made
// small and kept here so that the bug stays fixed.
#include <gtest/gtest.h>

#include "analyzer/model/summarize_trace.h"
#include "analyzer/model/timeline/timeline_builder.h"
#include "analyzer/model/trace_summary.h"
#include "tests/unit/chunked_file.h"
#include "tests/unit/trace_bytes.h"

namespace gmt::analyzer {
namespace {

using test::alloc_at;
using test::ChunkedFile;
using test::free_at;
using test::process_record;

// A chunk whose times go back (a delta decoded from damaged bytes): the duration was the last
// record's time, smaller than an earlier one's, and the second pass sized the timeline by it, so
// the earlier record's bucket was far past its end: a vector of ~10^12 entries was asked for.
TEST(FuzzRegressions, TimesThatGoBackDoNotOverrunTheTimeline) {
  ChunkedFile file;
  file.add_chunk(0, 0, 100, process_record(), alloc_at(4'000'000'000'000, 0, 0x1000, 64),
                 free_at(5'000, 0x1000), alloc_at(6'000, 0, 0x2000, 32));
  SummaryOptions options;
  options.timeline_resolution_ns = 1'000'000;
  const TraceSummary summary = summarize_trace_bytes(file.bytes(), "went-back.gmt", options);
  EXPECT_EQ(summary.duration_ns, 4'000'000'000'000u);
  EXPECT_EQ(summary.events, 3u);
  EXPECT_EQ(summary.devices.at(0).peak_bytes, 64u);
  const std::vector<uint64_t>& resident = summary.timeline.devices.at(0).resident;
  EXPECT_LE(resident.size(), kMaxTimelineBuckets + 1);
  EXPECT_EQ(resident.back(), 64u);  // the first allocation's bucket is the last one
}

}  // namespace
}  // namespace gmt::analyzer
