// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace oom`: every failed allocation with what the device held at that instant.
#include "analyzer/cli/command_support.h"
#include "analyzer/cli/commands.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/model/leak_classes.h"
#include "analyzer/report/byte_size.h"
#include "analyzer/report/cuda_error_name.h"
#include "analyzer/report/frames/frame_policy.h"
#include "analyzer/report/frames/stack_frames.h"
#include "analyzer/report/inference_report.h"
#include "analyzer/report/remedies_report.h"
#include "analyzer/report/roles_report.h"

namespace gmt::analyzer {
namespace {

// The failure in plain words, where the device's figures say it: a request larger than the
// whole device can never fit; one larger than what the device had free could not then.
std::string oom_verdict(const FailedAllocation& f) {
  if (!f.views || !f.views->driver_total_bytes) return "";
  const uint64_t total = *f.views->driver_total_bytes;
  if (f.requested_bytes > total) {
    return "larger than the whole device (" + human_bytes(total) + "): it can never fit";
  }
  if (const auto free = f.driver_free_bytes(); free && f.requested_bytes > *free) {
    return "more than the device had free (" + human_bytes(*free) + " of " + human_bytes(total) +
           ")";
  }
  return "";
}

nlohmann::ordered_json oom_json(const TraceSummary& trace, ResolvedStacks& frames) {
  using nlohmann::ordered_json;
  ordered_json failures = ordered_json::array();
  for (const FailedAllocation& f : trace.failures) {
    ordered_json holders = ordered_json::array();
    for (const PeakSite& h : f.holders) {
      ordered_json holder = {
          {"bytes", h.bytes},
          {"count", h.count},
          {"frames", frames_json(h.cache ? std::vector<SiteFrame>{} : frames[h.stack])}};
      if (h.allocator >= 0) {
        holder["allocator"] = allocator_name(h.allocator);
        holder["level"] = h.cache ? "cache" : "block";
      }
      holders.push_back(std::move(holder));
    }
    add_site_labels(holders);
    ordered_json row = failure_json(f);
    row["kind"] = format::memory_kind_name(f.kind);
    row["error"] = f.error;
    row["error_name"] = cuda_error_name(f.error);
    row["frames"] = frames_json(frames[f.stack]);
    row["verdict"] = oom_verdict(f);
    row["holders"] = std::move(holders);
    if (f.allocator >= 0) {
      row["allocator"] = allocator_name(f.allocator);
      row["allocator_requested_bytes"] = f.allocator_requested_bytes;
      row["cache_free_bytes"] = f.cache_free_bytes;
      row["largest_free_block_bytes"] = f.largest_free_block_bytes;
      row["fragmentation"] = f.fragmented;
    }
    if (f.roles) row.update(roles_json(*f.roles, 10));
    if (const auto inference = failure_inference(f)) row["inference"] = inference_json(*inference);
    failures.push_back(std::move(row));
  }
  add_site_labels(failures);
  return {{"trace", trace.path},
          {"failed_allocations", trace.failures.size() + trace.failures_not_kept},
          {"not_listed", trace.failures_not_kept},
          {"ooms", failures}};
}

void write_oom_text(const TraceSummary& trace, ResolvedStacks& frames, FrameMode mode,
                    std::ostream& out) {
  constexpr std::size_t kFailuresShown = 5;
  constexpr std::size_t kHoldersShown = 5;
  constexpr std::size_t kFramesShown = 3;
  const uint64_t total = trace.failures.size() + trace.failures_not_kept;
  if (total == 0) {
    out << trace.path << ": no allocation failed\n";
    return;
  }
  out << total << (total == 1 ? " failed allocation" : " failed allocations") << " in "
      << trace.path << "\n";
  for (std::size_t i = 0; i < trace.failures.size() && i < kFailuresShown; ++i) {
    const FailedAllocation& f = trace.failures[i];
    // What the program called leads, as its stack shows it: the trace may have caught only the
    // driver entry point it became.
    const std::string called =
        called_entry_point(frames[f.stack]).value_or(std::string(format::api_name(f.api)));
    out << "  at " << human_duration(f.time_ns) << " on " << device_name(f.device) << ": " << called
        << " of " << human_bytes(f.requested_bytes) << " (" << format::memory_kind_name(f.kind)
        << ", " << cuda_error_name(f.error) << ") with " << human_bytes(f.live_bytes) << " live\n";
    if (!f.retries.empty()) {
      out << "    retried "
          << (f.retries.size() == 1 ? "once" : std::to_string(f.retries.size()) + " times")
          << " after the allocator released " << human_bytes(f.released_bytes()) << "\n";
    }
    if (const std::string verdict = oom_verdict(f); !verdict.empty()) {
      out << "    " << verdict << "\n";
    }
    if (const auto free = f.driver_free_bytes()) {
      out << "    driver free then " << human_bytes(*free);
      if (const auto others = f.other_processes_bytes()) {
        out << ", other processes " << human_bytes(*others);
      }
      out << "\n";
    }
    if (f.allocator >= 0) {
      out << "    the " << allocator_name(f.allocator) << " allocator could not find "
          << human_bytes(f.allocator_requested_bytes) << "; its cache held "
          << human_bytes(f.cache_free_bytes) << " free\n";
      if (f.fragmented) {
        out << "    fragmentation: the cache held " << human_bytes(f.cache_free_bytes)
            << " free, but its largest free block was " << human_bytes(f.largest_free_block_bytes)
            << "\n";
      }
    }
    // In the user's terms first: what the memory held then was for.
    if (f.roles) write_roles_text(*f.roles, trace.roles_recorded, 5, " then", "    ", out);
    if (const auto inference = failure_inference(f))
      write_inference_text(*inference, " then", "    ", out);
    out << "    failed call\n";
    write_frames(frames[f.stack], kFramesShown, "      ", out, mode);
    if (!f.holders.empty()) out << "    held then\n";
    for (std::size_t h = 0; h < f.holders.size() && h < kHoldersShown; ++h) {
      const PeakSite& holder = f.holders[h];
      if (holder.cache) {
        out << "      " << human_bytes(holder.bytes) << " free in the "
            << allocator_name(holder.allocator)
            << (holder.graph ? " allocator's CUDA graph pools\n" : " cache\n");
        continue;
      }
      out << "      " << human_bytes(holder.bytes) << " in " << holder.count;
      if (holder.allocator >= 0) out << " " << allocator_name(holder.allocator) << " blocks";
      out << "\n";
      write_frames(frames[holder.stack], kFramesShown, "        ", out, mode);
    }
  }
  if (total > kFailuresShown) out << "  ... " << total - kFailuresShown << " more (--json)\n";
}

}  // namespace

int oom_command(const std::string& path, bool json, FrameMode mode, std::ostream& out,
                std::ostream& err) {
  auto remedies = start_remedies(path, std::nullopt);
  TraceSummary trace;
  try {
    trace = load_trace(path, err);
  } catch (const TraceError& e) {
    err << "gpumemtrace: " << e.what() << "\n";
    return 1;
  }
  std::vector<uint32_t> stacks;
  for (const FailedAllocation& f : trace.failures) {
    stacks.push_back(f.stack);
    for (const PeakSite& h : f.holders) stacks.push_back(h.stack);
  }
  ResolvedStacks frames = resolve_stacks(trace, stacks, trace.symbolization_warnings);
  // What would make it fit, at the end, where the user looks after the failures.
  const bool failed = !trace.failures.empty() || trace.failures_not_kept > 0;
  const auto found = failed ? remedies.get() : std::nullopt;
  if (json) {
    nlohmann::ordered_json answer = oom_json(trace, frames);
    if (found) add_remedies_json(*found, answer);
    out << answer.dump(2) << "\n";
  } else {
    write_oom_text(trace, frames, mode, out);
    if (found) write_remedies_text(*found, out);
  }
  return 0;
}

Command add_oom_command(CLI::App& app) {
  return add_trace_json_command(app, "oom", "Every failed allocation and what was held then",
                                &oom_command, true);
}

}  // namespace gmt::analyzer
