// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <filesystem>

#include "analyzer/model/input/progress_bar.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/model/summarize_trace.h"
#include "analyzer/report/peak_sites.h"
#include "analyzer/report/report.h"

namespace gmt::analyzer {

namespace {
constexpr std::size_t kTopSites = 10;

// The trace files `paths` name: files as given, the *.gmt files of directories in name order.
std::vector<std::string> trace_files(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec)) {
      files.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
      if (entry.path().extension() == ".gmt") found.push_back(entry.path().string());
    }
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

ResolvedStacks leak_and_failure_frames(TraceSummary& trace) {
  std::vector<uint32_t> stacks;
  for (std::size_t i = 0; i < trace.leaks.size() && i < kReportLeakGroups; ++i) {
    stacks.push_back(trace.leaks[i].stack);
  }
  for (const FailedAllocation& f : trace.failures) stacks.push_back(f.stack);
  return resolve_stacks(trace, stacks, trace.symbolization_warnings);
}

}  // namespace

ReportInput load_traces(const std::vector<std::string>& paths) {
  ReportInput input;
  for (const std::string& path : trace_files(paths)) {
    try {
      SummaryOptions options;
      options.progress = progress_stream();
      TraceSummary trace = summarize_trace(path, options);
      trace.symbolization_warnings = resolve_peak_sites(trace, kTopSites);
      input.frames.push_back(leak_and_failure_frames(trace));
      input.traces.push_back(std::move(trace));
    } catch (const TraceError& e) {
      input.unreadable.push_back({path, e.what()});
    }
  }
  return input;
}

}  // namespace gmt::analyzer
