// SPDX-License-Identifier: Apache-2.0
// What was never freed, grouped by site and told apart: memory a context's teardown released,
// memory a framework's caching allocator or a library (cuBLAS, cuDNN, NCCL, XLA) keeps on
// purpose, sites that keep growing (probable leaks) and the rest.
#pragma once

#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {

// How many points, evenly spaced in the trace's records, a site's live bytes are sampled at.
// (Spaced by records rather than by time: an idle start or end would flatten a growth.)
inline constexpr std::size_t kLeakSamples = 10;

// The positions (record indices) to sample after, for a trace of `records` records: the ends of
// kLeakSamples equal runs of records, the last record last.
std::vector<uint64_t> leak_sample_positions(uint64_t records);

// True when `samples` never go down, end higher than they begin, and go up in at least half
// of the intervals: a site that keeps growing, not one that grew once.
bool keeps_growing(const std::vector<uint64_t>& samples);

// A bounded trace's sites, sampled before the history kept too, so that a site that leaked all
// along shows its growth though its early records were dropped, as it does unbounded (and a
// site whose memory was all made at once shows none). Of kLeakSamples in all, the window keeps
// its share by records, its last samples; the others go before it, evenly in time up to the
// window's start, each counting what the checkpoint carried (`history.carried`) that was made by
// then. Nothing when no history was dropped.
void add_history_samples(TraceSummary& trace, const format::HistoryWindow& history);

// Fills trace.leaks from trace.sites (their live_samples taken at trace.sample_times),
// largest first.
void classify_leaks(TraceSummary& trace);

const char* leak_class_name(LeakClass c);

// A caching allocator's name in reports (format::BlockAllocator): "pytorch", "cupy", "other".
const char* allocator_name(int allocator);
// The name of what a caching allocator holds free, wherever it stands in for a stack (it has
// none): "(pytorch cache: free)".
std::string allocator_cache_name(int allocator);

// Memory never freed that nobody meant to keep: probable leaks and the unfreed rest (not what a
// caching allocator or a library keeps, nor what a context's teardown released).
inline bool unintended(LeakClass c) {
  return c == LeakClass::kProbableLeak || c == LeakClass::kUnfreed;
}

// The device-resident bytes of those on `device`.
uint64_t leaked_on(const TraceSummary& trace, int device);

}  // namespace gmt::analyzer
