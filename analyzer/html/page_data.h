// SPDX-License-Identifier: Apache-2.0
// The data of `gpumemtrace html`: one JSON object the page's drawing code reads, built from the
// model of each trace (and more passes over its records: the timeline by library; the views and
// phase runs over time; the allocations, segments and steps, allocation_pass.h). Its size is
// bounded whatever the traces' length: the limits below are the bound docs/export.md states.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "analyzer/html/allocation_pass.h"
#include "analyzer/report/report.h"

namespace gmt::analyzer {

struct HtmlLimits {
  // Timeline buckets per device, and in all: with many devices each gets fewer, never fewer than
  // min_buckets. Each bucket holds the most that was live during it.
  uint64_t buckets_per_device = 4000;
  uint64_t buckets_in_all = 32'000;
  uint64_t min_buckets = 500;
  std::size_t libraries = 6;       // layers per device before "other"
  std::size_t flame_nodes = 1000;  // expanded per device; each gets one "other" child at most
  std::size_t peak_sites = 10;     // with their stacks, per device
  std::size_t modules = 50;        // by role at the peak, per device
  std::size_t holders = 10;        // per failed allocation, with their stacks
  std::size_t ooms = 100;          // failed allocations per trace
  std::size_t leaks = kReportLeakGroups;    // leak groups per trace (the ones with frames)
  std::size_t phase_runs = 2000;            // per trace
  std::size_t frames = 24;                  // per stack, as frame_mode shows it
  FrameMode frame_mode = FrameMode::kUser;  // frame_policy.h
  std::size_t text = 300;                   // characters of a function or file name
  std::size_t process_rows = 1000;
  AllocationLimits allocations;  // the allocation view and the segments (allocation_pass.h)
  // Allocations kept whole in all the page's traces: each trace gets its share of it (at least
  // 200, at most allocations.bands); a page of more than 8 traces keeps fewer series, moments
  // and segment lifetimes per trace.
  std::size_t allocation_bands_in_all = 200'000;
  // What would make a failed run fit (remedies_report.h, as `oom` says it), for a page of at
  // most 8 traces.
  bool remedies = true;
};

// The object embedded in the page. Reads each trace's file again (its path in the model), one
// trace per worker (`jobs`: as load_traces's), the same whatever their number; throws TraceError
// when one cannot be read.
nlohmann::ordered_json html_report_data(ReportInput& input, const HtmlLimits& limits = {},
                                        unsigned jobs = 0);

}  // namespace gmt::analyzer
