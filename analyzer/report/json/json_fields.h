// SPDX-License-Identifier: Apache-2.0
// JSON fields that several reports share (report, oom, peak, leaks, diff and the HTML page's
// data), so that one thing is written one way everywhere.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {
// A value, or null for one the trace does not have.
template <class T>
nlohmann::ordered_json or_null(const std::optional<T>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

// What `report` and `oom` both say of a failed allocation: when, where, what was asked for
// and what the device held and had free then; its retries, each with what was released before.
nlohmann::ordered_json failure_json(const FailedAllocation& f);
nlohmann::ordered_json retries_json(const std::vector<FailedRetry>& retries);

// The process's rank in its job, or null.
nlohmann::ordered_json rank_json(const TraceSummary& trace);

// A device's counts over the whole trace, as the report, the page and `peak` name them:
// live_at_exit_bytes, live_at_exit_count, alloc_count, free_count, failed_alloc_count.
nlohmann::ordered_json device_counts_json(const DeviceSummary& device);

// Every frame, leaf first: function, file, line, module, kind ("native" | "python") and user
// (true on the first frame in the user's code, the one the text reports start from).
nlohmann::ordered_json frames_json(const std::vector<SiteFrame>& frames);

// Gives each row of `rows` (a JSON array) that has `frames` (as frames_json writes them) its
// `site`: its one-line label, told apart from the other rows' (site_labels, frame_text.h); "" for
// a row without frames (an allocator's free cache). Rows without `frames` are left as they are.
void add_site_labels(nlohmann::ordered_json& rows);

// A site's lifetime statistics: allocations made there, temporaries, sizes by power of two.
nlohmann::ordered_json site_stats_json(const SiteStats& site);

// The site of `stack` on `device`, or an empty one when the trace has none.
const SiteStats& site_of(const TraceSummary& trace, int device, uint32_t stack);

}  // namespace gmt::analyzer
