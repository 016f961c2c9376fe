// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/summarize_trace.h"

#include <algorithm>
#include <array>
#include <span>

#include "analyzer/model/input/mapped_file.h"
#include "analyzer/model/input/process_liveness.h"
#include "analyzer/model/input/progress_bar.h"
#include "analyzer/model/input/record_pipeline.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/model/leak_classes.h"
#include "analyzer/model/replay.h"
#include "analyzer/model/roles/outside_roles.h"
#include "analyzer/model/timeline/timeline_builder.h"
#include "format/file_header.h"
#include "format/recording_end.h"
#include "format/trace_reader.h"

namespace gmt::analyzer {

namespace {

// Replays every record the pipeline gives; true when one of them described the process.
bool replay_all(RecordPipeline& records, Replay& replay, ProgressBar& progress) {
  bool described = false;
  std::array<const format::MemoryEvent*, format::TraceReader::kBatchEvents> events;
  while (true) {
    const format::TraceReader::Batch batch = records.next_batch(events);
    if (batch.events == 0 && batch.other == nullptr) return described;
    replay.apply_events(std::span(events).first(batch.events));
    if (batch.other != nullptr) {
      described = described || std::holds_alternative<format::ProcessInfoRecord>(*batch.other);
      replay.apply(*batch.other);
    }
    progress.advance(batch.events + (batch.other != nullptr ? 1 : 0));
  }
}

// A growing key-value cache at exit: how many more tokens fit, by the allocator's model (a third
// pass, only for such traces).
void model_decode_ahead(std::span<const uint8_t> bytes, const std::string& path,
                        const format::PageAccess& pages, TraceSummary& summary) {
  const bool growing = std::any_of(summary.devices.begin(), summary.devices.end(), [](auto& d) {
    const auto& roles = d.second.roles_at_exit;
    return roles && roles->kv_cache && roles->kv_cache->capacity == 0;
  });
  if (!growing) return;
  allocator::DecodeAheadResult ahead = allocator::decode_ahead(bytes, path, pages);
  for (allocator::DecodeAhead& a : ahead.devices) {
    if (const auto d = summary.devices.find(a.device); d != summary.devices.end())
      d->second.decode_ahead = a;
  }
  for (auto& [device, why] : ahead.why_not) {
    if (const auto d = summary.devices.find(device); d != summary.devices.end())
      d->second.decode_ahead_why_not = std::move(why);
  }
}

// The decode steps that ran out, by device: what the run itself says of the tokens that fit
// before each (inference_report.h).
void note_decode_ran_out(TraceSummary& summary) {
  for (const FailedAllocation& f : summary.failures) {
    const auto d = summary.devices.find(f.device);
    if (d == summary.devices.end()) continue;
    if (auto ran_out = f.decode_ran_out()) d->second.decode_ran_out.push_back(*ran_out);
  }
}

}  // namespace

TraceSummary summarize_trace(const std::string& path, const SummaryOptions& options) {
  MappedFile file(path);
  TraceSummary summary = summarize_trace_bytes(file.bytes(), path, options, file.page_access());
  // No End record: the process died, or it still runs and writes the trace.
  if (summary.end == TraceEnd::kCut && still_running(process_identity(summary)))
    summary.end = TraceEnd::kRunning;
  return summary;
}

TraceSummary summarize_trace_bytes(std::span<const uint8_t> bytes, const std::string& path,
                                   const SummaryOptions& options, format::PageAccess pages) {
  const format::HeaderCheck header = format::check_header(bytes);
  if (!header.ok) throw TraceError(path + ": " + header.error);

  Replay replay;
  if (!options.peak_phase.empty()) replay.peaks_in_phase(options.peak_phase);
  format::TraceReader reader(bytes, header.header, pages);
  // The leak samples are taken at fractions of the trace's records: the reader counts them up
  // front, so one pass suffices. The peak sites and the views at the peaks need no second pass
  // either (Replay keeps what each site held at its device's latest new peak).
  const uint64_t expected = reader.expected_records();
  const bool timeline = options.timeline_resolution_ns > 0;
  if (!timeline) replay.sample_sites_after(leak_sample_positions(expected));
  const auto pipeline_mode =
      options.read_ahead ? RecordPipeline::Mode::kAuto : RecordPipeline::Mode::kInline;
  ProgressBar progress(options.progress, path, expected);
  bool described = false;
  {
    RecordPipeline records(reader, pipeline_mode);
    described = replay_all(records, replay, progress);
  }
  progress.finish();
  replay.finish();
  if (described) {
    uint64_t records = 0;
    for (uint64_t n : replay.summary().record_counts) records += n;
    // A second pass when the timeline is asked for (its resolution depends on the duration),
    // when some record's fields did not decode (the count up front was too high), or to take a
    // peak's block rows the first pass left for it (Replay::peak_pass_needed()): that pass's
    // summary is then the whole answer.
    const bool peak_pass = replay.peak_pass_needed();
    if (timeline || records != expected || peak_pass) {
      const uint64_t duration = replay.summary().duration_ns;
      Replay second;
      if (!options.peak_phase.empty()) second.peaks_in_phase(options.peak_phase);
      second.sample_sites_after(leak_sample_positions(records));
      if (timeline)
        second.record_timeline(timeline_resolution(options.timeline_resolution_ns, duration));
      if (peak_pass) second.plan_peak_snapshots(replay.peak_snapshot_plan());
      format::TraceReader again(bytes, header.header, pages);
      RecordPipeline records(again, pipeline_mode);
      ProgressBar no_progress(nullptr, path, 0);
      replay_all(records, second, no_progress);
      second.finish();
      TraceSummary& first = replay.summary();
      if (peak_pass) {
        first = std::move(second.summary());
      } else {
        first.sample_times = second.summary().sample_times;
        for (auto& [key, site] : first.sites) {
          site.live_samples = std::move(second.summary().sites[key].live_samples);
          site.live_count_samples = std::move(second.summary().sites[key].live_count_samples);
        }
        first.timeline = std::move(second.summary().timeline);
      }
    }
    add_history_samples(replay.summary(), reader.window());
    classify_leaks(replay.summary());
    split_outside_roles(replay.summary());
    model_decode_ahead(bytes, path, pages, replay.summary());
    note_decode_ran_out(replay.summary());
  }

  TraceSummary& summary = replay.summary();
  summary.path = path;
  summary.format_major = header.header.major;
  summary.format_minor = header.header.minor;
  summary.history = reader.window();
  summary.history.carried = {};  // in the leak samples now
  if (!summary.history.problem.empty()) summary.problems.push_back(summary.history.problem);
  // The first thing left out is what the report names; all of them go to `problems`.
  for (const format::ReadProblem& problem : reader.problems()) {
    if (!summary.truncated()) {
      summary.end = problem.kind == format::ReadProblem::Kind::kTruncated ? TraceEnd::kTruncated
                                                                          : TraceEnd::kCorrupt;
      summary.end_offset = problem.offset;
      summary.end_reason = problem.reason;
    }
    summary.problems.push_back("byte " + std::to_string(problem.offset) + ": " + problem.reason);
  }
  // The recorder writes why it stopped into the header page too: the only place left when it
  // stopped before its first chunk.
  const std::string header_stop_reason = format::read_stop_reason(bytes);
  if (!described) {
    // Only a header: recording failed before its first record. Not an unreadable file: the
    // trace of a process that ran, with nothing recorded, and why.
    if (reader.problems().empty() && reader.chunk_count() == 0) {
      summary.end = TraceEnd::kFailed;
      summary.end_reason =
          !header_stop_reason.empty()
              ? header_stop_reason
              : "the trace holds only its header (the process ended, or recording failed, "
                "before the first record)";
      summary.stop_reason = summary.end_reason;
      return summary;
    }
    throw TraceError(path + ": no process description in the trace" +
                     (summary.end_reason.empty() ? "" : " (" + summary.end_reason + ")"));
  }
  if (summary.stop_reason.empty() && !header_stop_reason.empty()) {
    // Stopped on a thread that had no chunk of its own to write the note into: the time is
    // that of the last record.
    summary.stop_reason = header_stop_reason;
    summary.stop_time_ns = summary.duration_ns;
  }
  // What was left out says more than how the recording ended; an End record after an exec note
  // means the exec failed without its note (it cannot: the process ended normally after all).
  if (!summary.truncated()) {
    if (!summary.stop_reason.empty()) {
      summary.end = TraceEnd::kStopped;
      summary.end_reason = summary.stop_reason;
    } else if (summary.end != TraceEnd::kExited && !summary.exec_program.empty()) {
      summary.end = TraceEnd::kExec;
    }
  }
  return summary;
}

}  // namespace gmt::analyzer
