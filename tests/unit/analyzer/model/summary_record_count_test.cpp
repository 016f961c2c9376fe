// SPDX-License-Identifier: Apache-2.0
// summarize_trace takes its leak samples at fractions of the records, counted before the first
// is read: from format 4.1, by the chunks' headers. A count that is wrong (a damaged header: the
// checksum covers only the payload) must change no figure: the records read then differ from
// the count, and a second pass takes the samples again.
#include <gtest/gtest.h>

#include "analyzer/model/summarize_trace.h"
#include "analyzer/model/trace_summary.h"
#include "format/chunk.h"
#include "tests/unit/chunked_file.h"
#include "tests/unit/trace_bytes.h"

namespace gmt::analyzer {
namespace {

using test::alloc_at;
using test::ChunkedFile;
using test::process_record;

format::AllocRecord leaked(uint64_t step) {
  format::AllocRecord r = alloc_at(1'000'000 * step, 0, 0x10000 + 0x100 * step, 64);
  r.stack = 3;
  return r;
}

// One writer's 1 + 20 records in four chunks: one site that keeps 64 bytes more every
// millisecond. `counted_as` replaces the first chunk's record count (its header's) when not 0.
std::vector<uint8_t> growing_trace(uint32_t counted_as) {
  ChunkedFile file;
  const uint64_t first = file.add_chunk(0, 0, 100, process_record(), leaked(0), leaked(1),
                                        leaked(2), leaked(3), leaked(4));
  for (uint32_t c = 1; c < 4; ++c) {
    const uint64_t s = 5 * c;
    file.add_chunk(0, c, 100, leaked(s), leaked(s + 1), leaked(s + 2), leaked(s + 3),
                   leaked(s + 4));
  }
  if (counted_as != 0) {
    file.set_counted(first, format::counted_word(file.published_length(first), counted_as));
  }
  return file.bytes();
}

TEST(SummaryRecordCount, AWrongCountInAChunkHeaderChangesNoFigure) {
  const TraceSummary right = summarize_trace_bytes(growing_trace(0), "right.gmt");
  ASSERT_EQ(right.events, 20u);
  ASSERT_EQ(right.sample_times.size(), 10u);
  ASSERT_EQ(right.leaks.size(), 1u);
  EXPECT_EQ(right.leaks[0].leak_class, LeakClass::kProbableLeak);
  for (const uint32_t wrong : {1u, 5u, 40u}) {  // the chunk holds 6
    const TraceSummary s = summarize_trace_bytes(growing_trace(wrong), "wrong.gmt");
    EXPECT_EQ(s.sample_times, right.sample_times) << wrong;
    ASSERT_EQ(s.sites.size(), right.sites.size()) << wrong;
    for (const auto& [key, site] : right.sites) {
      EXPECT_EQ(s.sites.at(key).live_samples, site.live_samples) << wrong;
    }
    ASSERT_EQ(s.leaks.size(), 1u) << wrong;
    EXPECT_EQ(s.leaks[0].leak_class, LeakClass::kProbableLeak) << wrong;
    EXPECT_DOUBLE_EQ(s.leaks[0].growth_bytes_per_s, right.leaks[0].growth_bytes_per_s) << wrong;
    EXPECT_TRUE(s.problems.empty()) << wrong;
  }
}

}  // namespace
}  // namespace gmt::analyzer
