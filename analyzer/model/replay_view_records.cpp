// SPDX-License-Identifier: Apache-2.0
// The replay of what the sampler and the phase markers recorded: devices, view samples, names,
// phases and notes (the state is ViewsReplay's).
#include <cstdlib>
#include <string_view>

#include "analyzer/model/replay.h"
#include "analyzer/model/trace_env.h"
#include "format/recording_end.h"

namespace gmt::analyzer {

void Replay::on(const format::DeviceRecord& r) {
  views_.on(r);
}

void Replay::on(const format::SampleRecord& r) {
  views_.on(r);
  if (r.reason == static_cast<uint32_t>(format::SampleReason::kFramework)) return;
  ++summary_.view_samples;
  // The failures of the device not yet given views are the latest ones.
  for (auto it = summary_.failures.rbegin(); it != summary_.failures.rend(); ++it) {
    if (it->views) break;
    if (it->device == r.device && it->time_ns <= r.time_ns) it->views = views_.latest(r.device);
  }
}

void Replay::on(const format::NameRecord& r) {
  views_.on(r);
  roles_.on(r);
}

void Replay::on(const format::PhaseRecord& r) {
  views_.on(r);
  if (!peak_phase_.empty()) follow_peak_phase(r.time_ns);
}

void Replay::follow_peak_phase(uint64_t time_ns) {
  const bool open = views_.phase_open(peak_phase_);
  if (open == peaks_counted_) return;
  peaks_counted_ = open;
  if (!open) {
    // The plateau of a peak reached in the phase ends with it: the allocator's later blocks
    // are not the phase's.
    end_block_plateaus();
    return;
  }
  auto& window = summary_.phase_window;
  if (!window) {
    // The first run: the peaks so far were before the phase.
    window.emplace();
    window->name = peak_phase_;
    window->first_start_ns = time_ns;
    for (auto& [ordinal, d] : summary_.devices) {
      window->live_at_first_start[ordinal] = d.live_bytes;
      d.peak_bytes = 0;
    }
  }
  ++window->runs;
  // What is live as the phase opens is its first candidate.
  for (auto& [ordinal, d] : summary_.devices) {
    if (d.live_bytes == 0 || d.live_bytes <= d.peak_bytes) continue;
    d.peak_bytes = d.live_bytes;
    d.peak_time_ns = time_ns;
    d.peak_record = record_index_;
    peaked_.push_back(ordinal);
    views_.usage_changed(ordinal, d.live_bytes, time_ns, true);
  }
}

// Pools are counted (info, report); their memory is in the sampler's pool_reserved/pool_used.
void Replay::on(const format::PoolRecord& r) {
  switch (r.api) {
    case format::Api::kCuMemPoolCreate:
      ++summary_.pools_created;
      break;
    case format::Api::kCuMemPoolDestroy:
      ++summary_.pools_destroyed;
      break;
    default:
      ++summary_.pool_trims;
      break;
  }
}

// Most notes are only told; those that say how the recording ended set the trace's end
// (summarize_trace() decides it, knowing what the reader left out).
void Replay::on(const format::NoteRecord& r) {
  summary_.notes.push_back(r.text);
  const std::string_view text = r.text;
  if (text.starts_with(format::kStoppedNote)) {
    if (summary_.stop_reason.empty()) {
      summary_.stop_reason = text.substr(format::kStoppedNote.size());
      summary_.stop_time_ns = r.time_ns;
    }
  } else if (text.starts_with(format::kExecNote)) {
    summary_.exec_program = text.substr(format::kExecNote.size());
    summary_.exec_time_ns = r.time_ns;
  } else if (text.starts_with(format::kExecFailedNote)) {
    summary_.exec_program.clear();
    summary_.exec_time_ns = 0;
  } else if (text.starts_with(format::kDroppedNote)) {
    const std::string_view rest = text.substr(format::kDroppedNote.size());
    uint64_t n = 0;
    for (char c : rest) {
      if (c < '0' || c > '9') break;
      n = n * 10 + static_cast<uint64_t>(c - '0');
    }
    summary_.dropped_records += n;
  }
}

// The last one is why the process died, when nothing came after it (an End record).
void Replay::on(const format::SignalRecord& r) {
  summary_.signal = FatalSignal{r.signal, r.code, r.address, r.sender, r.time_ns, r.thread};
}

void Replay::finish_views() {
  for (auto& [ordinal, d] : summary_.devices) {
    if (auto it = views_.identities().find(ordinal); it != views_.identities().end())
      d.identity = it->second;
    d.views_at_peak = views_.views_at_peak(ordinal);
    d.views_at_exit = views_.views_at_exit(ordinal);
    d.peak_phase = views_.peak_phase(ordinal);
  }
  summary_.phases = views_.phases(summary_.duration_ns);
  summary_.open_at_end = views_.open_phases();
  summary_.marks = views_.marks();
}

// The launchers' rank variables, in the order output_path.cpp reads them for %r.
std::optional<int> rank_of(const std::vector<std::string>& env) {
  for (std::string_view name :
       {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    const std::optional<std::string_view> text = env_value(env, name);
    if (!text) continue;
    const std::string value(*text);
    char* end = nullptr;
    const long number = std::strtol(value.c_str(), &end, 10);
    if (end != value.c_str() && *end == '\0') return static_cast<int>(number);
  }
  return std::nullopt;
}

}  // namespace gmt::analyzer
