// SPDX-License-Identifier: Apache-2.0
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "analyzer/model/input/progress_bar.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/model/summarize_trace.h"
#include "analyzer/model/worker_pool.h"
#include "analyzer/report/json/trace_summary_json.h"
#include "analyzer/report/peak_sites.h"
#include "analyzer/report/report.h"
#include "format/trace_file_name.h"

namespace gmt::analyzer {

namespace {
constexpr std::size_t kTopSites = 10;

// Whether the file starts with the trace magic (format/file_header.cpp): in a directory, only
// those are traces; a file named on the command line is read whatever it holds.
bool starts_like_a_trace(const std::filesystem::path& path) {
  static constexpr unsigned char kMagic[8] = {0x89, 'G', 'M', 'T', '\r', '\n', 0x1a, '\n'};
  std::ifstream file(path, std::ios::binary);
  char head[sizeof kMagic] = {};
  if (!file.read(head, sizeof head)) return false;
  return std::memcmp(head, kMagic, sizeof kMagic) == 0;
}

struct TraceFiles {
  std::vector<std::string> files;
  std::vector<UnreadableTrace> errors;  // directories that hold no trace
};

// The traces of a directory, in name order: a file and the symbolic links to it there are one
// trace, named by the file itself (a job's `latest.gmt` pointing at a rank's trace is no second
// process, and the rank keeps its name).
std::vector<std::string> one_name_per_file(
    const std::vector<std::filesystem::directory_entry>& found) {
  std::map<std::pair<dev_t, ino_t>, const std::filesystem::directory_entry*> by_file;
  std::vector<std::string> names;
  for (const auto& entry : found) {
    struct stat st {};
    if (::stat(entry.path().c_str(), &st) != 0) {
      names.push_back(entry.path().string());
      continue;
    }
    const std::filesystem::directory_entry*& named = by_file[{st.st_dev, st.st_ino}];
    std::error_code ec;
    if (named == nullptr || (named->is_symlink(ec) && !entry.is_symlink(ec))) named = &entry;
  }
  for (const auto& [file, entry] : by_file) names.push_back(entry->path().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The trace files `paths` name: files as given, the traces of directories in name order; each
// file once, however many times it is named (by its device and inode).
TraceFiles trace_files(const std::vector<std::string>& paths) {
  TraceFiles out;
  std::set<std::pair<dev_t, ino_t>> seen;
  const auto add = [&](const std::string& file) {
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0 && !seen.insert({st.st_dev, st.st_ino}).second) return;
    out.files.push_back(file);
  };
  for (const std::string& path : paths) {
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec)) {
      add(path);
      continue;
    }
    std::vector<std::filesystem::directory_entry> found;
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
      std::error_code type_ec;
      if (entry.is_regular_file(type_ec) &&
          ((format::trace_file_name(entry.path().filename().string()) &&
            starts_like_a_trace(entry.path())) ||
           starts_like_a_summary(entry.path()))) {
        found.push_back(entry);
      }
    }
    if (found.empty()) {
      out.errors.push_back({path, "no traces in " + path});
      continue;
    }
    for (const std::string& file : one_name_per_file(found)) add(file);
  }
  return out;
}

// The inputs that are a process already given (host, pid and the start of its trace: a trace
// and the summary of it, two copies of a trace) are left out, the trace kept over a summary, and
// each said in `same_process`. A trace that records no start (0) is nobody's copy.
void count_each_process_once(ReportInput& input) {
  std::map<std::tuple<std::string, uint64_t, uint64_t>, std::size_t> first;  // -> kept index
  std::vector<bool> dropped(input.traces.size(), false);
  const auto what = [&](std::size_t i) {
    return input.summary_files[i].empty() ? "the trace " + input.traces[i].path
                                          : "the summary " + input.summary_files[i];
  };
  for (std::size_t i = 0; i < input.traces.size(); ++i) {
    const TraceSummary& t = input.traces[i];
    if (t.wall_start_ns == 0) continue;
    const auto [at, added] = first.try_emplace({t.host, t.pid, t.wall_start_ns}, i);
    if (added) continue;
    std::size_t keep = at->second, drop = i;
    // The trace holds everything a summary of it does, and its records.
    if (!input.summary_files[keep].empty() && input.summary_files[drop].empty())
      std::swap(keep, drop);
    at->second = keep;
    dropped[drop] = true;
    input.same_process.push_back(what(drop) + " is the same process as " + what(keep) + " (pid " +
                                 std::to_string(t.pid) +
                                 ", started at the same moment): counted once, from " +
                                 (input.summary_files[keep].empty() ? "the trace" : "the first"));
  }
  ReportInput kept;
  for (std::size_t i = 0; i < input.traces.size(); ++i) {
    if (dropped[i]) continue;
    kept.traces.push_back(std::move(input.traces[i]));
    kept.frames.push_back(std::move(input.frames[i]));
    kept.summary_files.push_back(std::move(input.summary_files[i]));
  }
  input.traces = std::move(kept.traces);
  input.frames = std::move(kept.frames);
  input.summary_files = std::move(kept.summary_files);
}

// The images of one process: a trace that ended in exec, and the trace of the same host and pid
// that began after that exec, are one process (its second image), and so on along the chain.
void link_exec_images(ReportInput& input) {
  std::map<std::pair<std::string, uint64_t>, std::vector<std::size_t>> by_process;
  for (std::size_t i = 0; i < input.traces.size(); ++i)
    by_process[{input.traces[i].host, input.traces[i].pid}].push_back(i);
  for (auto& [process, traces] : by_process) {
    if (traces.size() < 2) continue;
    // The exec's time counts from the trace's monotonic start: compared on that clock, the next
    // image began after it. The wall clock, read a moment apart from the monotonic one at each
    // start, can put an image that began within microseconds of the exec before it.
    const bool monotonic = std::all_of(traces.begin(), traces.end(), [&](std::size_t i) {
      return input.traces[i].mono_start_ns != 0;
    });
    const auto start = [&](const TraceSummary& t) {
      return monotonic ? t.mono_start_ns : t.wall_start_ns;
    };
    std::sort(traces.begin(), traces.end(), [&](std::size_t a, std::size_t b) {
      return start(input.traces[a]) < start(input.traces[b]);
    });
    for (std::size_t k = 1; k < traces.size(); ++k) {
      const TraceSummary& before = input.traces[traces[k - 1]];
      TraceSummary& after = input.traces[traces[k]];
      if (before.end == TraceEnd::kExec && start(after) >= start(before) + before.exec_time_ns)
        after.exec_image = before.exec_image + 1;
    }
  }
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

ReportInput load_traces(const std::vector<std::string>& paths, unsigned jobs) {
  ReportInput input;
  TraceFiles files = trace_files(paths);
  input.unreadable = std::move(files.errors);
  const unsigned workers = std::min<std::size_t>(worker_count(jobs), files.files.size());
  // What each trace gives, in input order whichever worker made it: only the summaries (and the
  // frames they name) are kept, never a trace's records.
  struct Loaded {
    std::optional<TraceSummary> trace;
    ResolvedStacks frames;
    std::string summary_file;  // "" for a trace
    std::string error;
  };
  std::vector<Loaded> loaded(files.files.size());
  // One bar for the whole job when several workers read at once (theirs would overwrite each
  // other): a trace done is kStride units, so that each one redraws it.
  std::mutex progress_mutex;
  std::optional<ProgressBar> job_progress;
  if (workers > 1) {
    job_progress.emplace(progress_stream(), std::to_string(files.files.size()) + " traces",
                         files.files.size() * ProgressBar::kStride);
  }
  for_each_index(files.files.size(), workers, [&](std::size_t i) {
    const std::string& path = files.files[i];
    try {
      // A summary is told by its content: a JSON object, where a trace starts with its magic.
      if (!starts_like_a_trace(path) && starts_like_json(path)) {
        SummaryInput summary = read_trace_summary(path);
        loaded[i].frames = std::move(summary.frames);
        loaded[i].trace = std::move(summary.trace);
        loaded[i].summary_file = path;
        if (job_progress) {
          std::lock_guard<std::mutex> lock(progress_mutex);
          job_progress->advance(ProgressBar::kStride);
        }
        return;
      }
      SummaryOptions options;
      if (workers > 1) {
        options.read_ahead = false;  // the other workers already use the other CPUs
      } else {
        options.progress = progress_stream();
      }
      TraceSummary trace = summarize_trace(path, options);
      trace.symbolization_warnings = resolve_peak_sites(trace, kTopSites);
      loaded[i].frames = leak_and_failure_frames(trace);
      loaded[i].trace = std::move(trace);
    } catch (const TraceError& e) {
      loaded[i].error = e.what();
    }
    if (job_progress) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      job_progress->advance(ProgressBar::kStride);
    }
  });
  if (job_progress) job_progress->finish();
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    if (loaded[i].trace) {
      input.traces.push_back(std::move(*loaded[i].trace));
      input.frames.push_back(std::move(loaded[i].frames));
      input.summary_files.push_back(std::move(loaded[i].summary_file));
    } else {
      input.unreadable.push_back({files.files[i], std::move(loaded[i].error)});
    }
  }
  count_each_process_once(input);
  link_exec_images(input);
  return input;
}

}  // namespace gmt::analyzer
