// SPDX-License-Identifier: Apache-2.0
// The job view of `report` for more than one trace (the ranks of a distributed job, or any run
// of several processes): each rank's peak, bytes never freed and failed allocations per device,
// the highest peak against the median, the leak sites merged across ranks and the job's first
// failed allocation in wall-clock time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analyzer/report/report.h"

namespace gmt::analyzer {

struct JobRow {
  std::size_t trace = 0;  // index into ReportInput::traces
  int device = -1;
  uint64_t peak_bytes = 0;
  uint64_t leaked_bytes = 0;  // device-resident, never freed, not meant to be kept (leaked_on)
  uint64_t failed_alloc_count = 0;
};

// One leak site (the same frames: function, file and line of each) over the traces that have it.
struct JobLeakSite {
  std::vector<SiteFrame> frames;  // of the first trace that has it
  std::vector<std::size_t> traces;
  uint64_t bytes = 0;                     // summed over the traces
  uint64_t min_bytes = 0, max_bytes = 0;  // of one trace
};

struct JobOom {
  std::size_t trace = 0;
  std::size_t failure = 0;    // index into that trace's failures
  uint64_t wall_time_ns = 0;  // the trace's start (its process record) + the failure's time
};

struct JobView {
  std::vector<JobRow> rows;             // per trace and device, in trace order
  std::optional<std::size_t> highest;   // the row of the highest peak (the first one)
  uint64_t median_peak_bytes = 0;       // of the rows (the mean of the two middle ones if even)
  std::optional<double> spread;         // highest / median (none when the median is 0)
  std::vector<JobLeakSite> leak_sites;  // largest first
  std::optional<JobOom> first_oom;
};

// Leak sites shown: the text lists the first kJobLeakSitesText, the JSON kJobLeakSitesJson.
inline constexpr std::size_t kJobLeakSitesText = 10;
inline constexpr std::size_t kJobLeakSitesJson = 100;

JobView job_view(const ReportInput& input);

// "rank 2 (pid 1234)", or "pid 1234" for a process with no rank; "pid 1234 (after exec)" for the
// image a process exec'd (TraceSummary::exec_image).
std::string who(const TraceSummary& trace);

// The processes of `traces`: each trace but the images a process exec'd after another one read.
std::size_t process_count(const std::vector<TraceSummary>& traces);

// What makes two processes' sites the same site: the function, file and line of every frame
// (not the module's load address, which differs from process to process), as one string.
std::string site_identity(const std::vector<SiteFrame>& frames);

// The one-line names of the job's leak sites (site_labels, frame_text.h: "train.cpp:9", told
// apart by their callers where two share it), in the order of `view.leak_sites`; "(no stack)" for
// a site without frames.
std::vector<std::string> leak_site_names(const JobView& view);

// The lines that follow the table of processes in the text report.
void write_job_text(const ReportInput& input, std::ostream& out);

// The report's `job` object (docs/commands.md, `report --json`).
nlohmann::ordered_json job_json(const ReportInput& input);

}  // namespace gmt::analyzer
