// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/whatif_report.h"

#include <iomanip>
#include <sstream>
#include <vector>

#include "analyzer/report/byte_size.h"
#include "analyzer/report/json/json_fields.h"

namespace gmt::analyzer {
namespace {

using allocator::DevicePrediction;
using allocator::DeviceReplayResult;
using allocator::Divergence;
using allocator::Gap;
using allocator::SegmentStep;
using allocator::WhatIfResult;
using json = nlohmann::ordered_json;

std::string step_text(const SegmentStep& s) {
  return (s.map ? "a mapping of " : "a cudaMalloc of ") + human_bytes(s.size);
}

// Why the unchanged replay is not exact, beyond its first divergence: one phrase each.
std::vector<std::string> inexact_reasons(const DeviceReplayResult& d) {
  std::vector<std::string> why;
  if (d.history_dropped)
    why.emplace_back(
        "the trace kept only the end of the run (a bounded trace): the replay "
        "starts from a state it does not have");
  if (d.divergence) why.push_back(divergence_text(*d.divergence));
  if (d.recorded_max_reserved != d.stats.max_reserved_bytes)
    why.push_back("highest reserved: recorded " + human_bytes(d.recorded_max_reserved) +
                  ", model " + human_bytes(d.stats.max_reserved_bytes));
  if (d.recorded_max_allocated != d.stats.max_allocated_bytes)
    why.push_back("highest allocated: recorded " + human_bytes(d.recorded_max_allocated) +
                  ", model " + human_bytes(d.stats.max_allocated_bytes));
  for (const auto& [gap, count] : d.gaps) {
    if (gap == Gap::kUnknownFree && count > 0)
      why.push_back(std::to_string(count) + " frees of blocks the trace never showed allocated");
  }
  return why;
}

json gaps_json(const std::vector<std::pair<Gap, uint64_t>>& gaps) {
  json out = json::array();
  for (const auto& [gap, count] : gaps) {
    out.push_back({{"gap", gap_name(gap)},
                   {"count", count},
                   {"always", allocator::always_present(gap)},
                   {"text", std::string(allocator::describe(gap))}});
  }
  return out;
}

json divergence_json(const Divergence& d) {
  static constexpr const char* kKinds[] = {"segment", "release", "request_failed",
                                           "request_served"};
  json out = {{"kind", kKinds[static_cast<int>(d.kind)]},
              {"matched_segments", d.segment},
              {"request", d.request}};
  const auto step = [](const std::optional<SegmentStep>& s) {
    if (!s) return json(nullptr);
    return json{{"action", s->map ? "map" : "cudaMalloc"}, {"size", s->size}};
  };
  if (d.kind == Divergence::Kind::kSegment) {
    out["recorded"] = step(d.recorded);
    out["predicted"] = step(d.modelled);
  } else {
    out["recorded_bytes"] = d.recorded_bytes;
    out["predicted_bytes"] = d.modelled_bytes;
  }
  out["text"] = divergence_text(d);
  return out;
}

json fidelity_json(const DeviceReplayResult& d) {
  return {{"device", d.device},
          {"exact", d.exact()},
          {"segments",
           {{"recorded", d.recorded_segments},
            {"predicted", d.modelled_segments},
            {"matched", d.matched_segments}}},
          {"max_reserved_bytes",
           {{"recorded", d.recorded_max_reserved}, {"predicted", d.stats.max_reserved_bytes}}},
          {"max_allocated_bytes",
           {{"recorded", d.recorded_max_allocated}, {"predicted", d.stats.max_allocated_bytes}}},
          {"divergence", d.divergence ? divergence_json(*d.divergence) : json(nullptr)},
          {"diverged", inexact_reasons(d)},
          {"requests", d.requests},
          {"recorded_ooms", d.recorded_ooms},
          {"empty_cache_mirrored", d.empty_cache_mirrored},
          {"allocator_releases", d.allocator_releases},
          {"deferred_frees", d.deferred_frees},
          {"expandable_segments_inferred", d.expandable_inferred},
          {"history_dropped", d.history_dropped},
          {"gaps", gaps_json(d.gaps)}};
}

json bytes_or_null(uint64_t v, uint64_t none) {
  return v == none ? json(nullptr) : json(v);
}

const char* stage_name(allocator::ShardStage stage) {
  switch (stage) {
    case allocator::ShardStage::kZero1:
      return "zero1";
    case allocator::ShardStage::kZero2:
      return "zero2";
    case allocator::ShardStage::kZero3:
      return "zero3";
  }
  return "zero1";
}

std::string factor_text(double k) {
  std::ostringstream s;
  s << k;
  return s.str();
}

// Every role, recorded and predicted bytes at the highest allocated.
json by_role_json(const DevicePrediction& p) {
  json out = json::object();
  for (std::size_t r = 0; r < kRoleCount; ++r) {
    out[role_name(static_cast<Role>(r))] = {{"recorded_bytes", p.recorded_roles[r]},
                                            {"predicted_bytes", p.predicted_roles[r]}};
  }
  return out;
}

json batch_json(const allocator::BatchSearch& b) {
  if (!b.ran && b.not_run.empty()) return nullptr;
  return {{"largest_fitting", or_null(b.largest)},
          {"step", allocator::kBatchStep},
          {"searched_up_to", allocator::kLargestBatchSearched},
          {"margin_percent", allocator::kVerdictMarginPercent},
          {"capped", b.capped},
          {"smallest_failing", or_null(b.smallest_failing)},
          {"replays", b.replays},
          {"not_run", b.not_run.empty() ? json(nullptr) : json(b.not_run)}};
}

json batch_from_json(const WhatIfResult& result) {
  if (!result.batch_from) return nullptr;
  const WhatIfResult::BatchFrom& b = *result.batch_from;
  return {{"trace", b.trace},
          {"batch_ratio", b.ratio},
          {"requests", b.requests},
          {"matched_requests", b.matched}};
}

// What the changes by role do not model, one note each.
std::vector<std::string> role_change_notes(const allocator::WhatIfOptions& o) {
  std::vector<std::string> notes;
  if (o.batch_from)
    notes.emplace_back(
        "batch from a second run: each request matched in it (the same module, role and order) "
        "grows as its two sizes say, in a straight line through them; a request not matched "
        "scales by its role (activations, temporaries and inputs with the batch)");
  else if (o.batch_scale || o.largest_batch)
    notes.emplace_back(
        "batch scale: activations, temporaries and inputs scale with the batch, each request "
        "by the same factor (a library's workspace that does not is not known apart; "
        "--batch-from a run at another batch fits each request)");
  if (o.shard)
    notes.emplace_back(
        "shard: by formula, the sharded roles' requests divided over the ranks; not modelled: "
        "communication buffers, ZeRO-3's gathered parameters, flat buffers' padding");
  if (!o.dtype.empty())
    notes.emplace_back("dtype: the role's tensors taken to be float32 in the recording");
  if (!o.checkpoint.empty())
    notes.emplace_back(
        "checkpoint: a module's output taken to be the activation of its forward that the "
        "backward releases first; its recomputation runs where the backward first releases one "
        "of the others");
  return notes;
}

// What checkpointing changed, a line a module.
std::vector<std::string> checkpoint_lines(const WhatIfResult& result) {
  std::vector<std::string> lines;
  for (const allocator::CheckpointedModule& m : result.checkpointed) {
    if (m.forwards == 0) {
      lines.push_back("checkpoint " + m.name +
                      ": no activation of its forwards is released by a backward: unchanged");
    } else {
      lines.push_back("checkpoint " + m.name + ": " + std::to_string(m.forwards) +
                      " forward(s) recomputed in backward, up to " + human_bytes(m.max_bytes) +
                      " of activations released at the end of one");
    }
  }
  return lines;
}

}  // namespace

const char* gap_name(Gap gap) {
  switch (gap) {
    case Gap::kCrossStreamUse:
      return "cross_stream_use";
    case Gap::kUnknownFree:
      return "unknown_free";
    case Gap::kUserMemPool:
      return "user_mem_pool";
    case Gap::kSyntheticAddresses:
      return "synthetic_addresses";
    case Gap::kCapacityIsOneNumber:
      return "capacity_is_one_number";
    case Gap::kFreeMemoryCallbacks:
      return "free_memory_callbacks";
    case Gap::kFreeablePoolOrder:
      return "freeable_pool_order";
    case Gap::kCaptureFilter:
      return "capture_filter";
  }
  return "unknown";
}

std::string empty_cache_at_text(const allocator::EmptyCacheAt& at) {
  switch (at.kind) {
    case allocator::EmptyCacheAt::Kind::kStep:
      return "optimizer step";
    case allocator::EmptyCacheAt::Kind::kBackward:
      return "backward";
    case allocator::EmptyCacheAt::Kind::kPhase:
      break;
  }
  return "phase '" + at.phase + "'";
}

std::string changes_text(const allocator::WhatIfOptions& o) {
  std::vector<std::string> parts;
  if (o.alloc_conf) parts.push_back("PYTORCH_CUDA_ALLOC_CONF='" + *o.alloc_conf + "'");
  if (o.batch_scale)
    parts.push_back("batch x" + factor_text(*o.batch_scale) +
                    (o.batch_from ? " (fitted from " + *o.batch_from + ")" : ""));
  if (o.shard)
    parts.push_back("shard over " + std::to_string(o.shard->ranks) + " ranks (" +
                    stage_name(o.shard->stage) + ")");
  for (const auto& [role, factor] : o.dtype)
    parts.push_back(std::string(role_name(role)) + " x" + factor_text(factor) + " (dtype)");
  if (o.set_to_none) parts.push_back("zero_grad(set_to_none=True)");
  if (!o.checkpoint.empty()) {
    std::string names;
    for (const std::string& m : o.checkpoint) names += (names.empty() ? "" : ", ") + m;
    parts.push_back("checkpoint " + names);
  }
  if (o.empty_cache_at)
    parts.push_back("torch.cuda.empty_cache() at the end of each " +
                    empty_cache_at_text(*o.empty_cache_at));
  if (o.device_memory) parts.push_back("device memory " + human_bytes(*o.device_memory));
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string divergence_text(const Divergence& d) {
  const std::string at = " (after " + std::to_string(d.segment) + " segments matched, at request " +
                         std::to_string(d.request + 1) + ")";
  switch (d.kind) {
    case Divergence::Kind::kSegment:
      if (d.recorded && d.modelled)
        return "segment " + std::to_string(d.segment + 1) + ": the recording took " +
               step_text(*d.recorded) + ", the model " + step_text(*d.modelled) + at;
      if (d.recorded)
        return "segment " + std::to_string(d.segment + 1) + ": the recording took " +
               step_text(*d.recorded) + ", the model none" + at;
      if (d.modelled)
        return "segment " + std::to_string(d.segment + 1) + ": the model took " +
               step_text(*d.modelled) + ", the recording none" + at;
      return "segments differ" + at;
    case Divergence::Kind::kRelease:
      return "a release of cached segments: the recording gave back " +
             human_bytes(d.recorded_bytes) + ", the model " + human_bytes(d.modelled_bytes) + at;
    case Divergence::Kind::kRequestFailed:
      return "the model failed a request of " + human_bytes(d.recorded_bytes) +
             " that the recording served" + at;
    case Divergence::Kind::kRequestServed:
      return "the model served a request of " + human_bytes(d.recorded_bytes) +
             " that the recording failed (OOM)" + at;
  }
  return "unknown" + at;
}

json whatif_json(const WhatIfRequest& request, const WhatIfResult& result) {
  json devices = json::array();
  json fidelity_devices = json::array();
  bool all_exact = !result.devices.empty();
  for (const DevicePrediction& p : result.devices) {
    const bool exact = p.fidelity.exact();
    all_exact = all_exact && exact;
    devices.push_back({{"device", p.device},
                       {"total_bytes", bytes_or_null(p.total_bytes, 0)},
                       {"capacity_bytes", bytes_or_null(p.capacity, UINT64_MAX)},
                       {"outside_bytes", p.outside_bytes},
                       {"recorded",
                        {{"max_allocated_bytes", p.recorded_max_allocated},
                         {"max_reserved_bytes", p.recorded_max_reserved},
                         {"ooms", p.fidelity.recorded_ooms}}},
                       {"predicted",
                        {{"max_allocated_bytes", p.predicted_max_allocated},
                         {"max_reserved_bytes", p.predicted_max_reserved},
                         {"fits", p.past_caught_failure ? json(nullptr) : json(p.fits && !p.close)},
                         {"not_predicted_after_failure", p.past_caught_failure},
                         {"too_close", p.close},
                         {"fits_with_margin", p.fits_with_margin},
                         {"margin_bytes", allocator::verdict_margin(p.capacity)},
                         {"exact", exact},
                         {"first_failed_request_bytes", or_null(p.first_failed_size)},
                         {"recorded_failures_served", p.recorded_failures_served},
                         {"requests_after_served_failure", p.requests_after_served_failure},
                         {"empty_cache_added", p.empty_cache_added}}},
                       {"by_role", by_role_json(p)},
                       {"gaps", gaps_json(p.gaps)}});
    fidelity_devices.push_back(fidelity_json(p.fidelity));
  }
  json notes = json::array();
  for (const std::string& k : result.conf.not_modelled)
    notes.push_back("not modelled: " + k + " (PyTorch would follow it; the prediction does not)");
  for (const std::string& k : result.conf.no_effect)
    notes.push_back(k + ": changes nothing the model replays");
  if (result.cuda_graph_captures > 0)
    notes.push_back("CUDA graph captures (" + std::to_string(result.cuda_graph_captures) +
                    "): their private pools are not followed");
  for (std::string& n : role_change_notes(request.options)) notes.push_back(std::move(n));
  for (std::string& n : checkpoint_lines(result)) notes.push_back(std::move(n));
  const allocator::WhatIfOptions& o = request.options;
  json checkpoint = json::array();
  for (const allocator::CheckpointedModule& m : result.checkpointed)
    checkpoint.push_back({{"module", m.name},
                          {"forwards", m.forwards},
                          {"blocks", m.blocks},
                          {"max_bytes_per_forward", m.max_bytes}});
  json dtype = json::object();
  for (const auto& [role, factor] : o.dtype) dtype[role_name(role)] = factor;
  json shard = nullptr;
  if (o.shard) shard = {{"ranks", o.shard->ranks}, {"stage", stage_name(o.shard->stage)}};
  return {{"trace", request.path},
          {"alloc_conf", or_null(o.alloc_conf)},
          {"device_memory_bytes", or_null(o.device_memory)},
          {"batch_scale", or_null(o.batch_scale)},
          {"batch_from", batch_from_json(result)},
          {"set_to_none", result.set_to_none
                              ? json{{"steps", result.set_to_none->steps},
                                     {"gradients_freed", result.set_to_none->gradients_freed},
                                     {"temporaries_kept", result.set_to_none->kept}}
                              : json(nullptr)},
          {"shard", shard},
          {"dtype", dtype},
          {"checkpoint", checkpoint},
          {"empty_cache_at",
           o.empty_cache_at ? json(empty_cache_at_text(*o.empty_cache_at)) : json(nullptr)},
          {"changed", result.changed},
          {"roles_recorded", result.roles_recorded},
          {"block_events", result.block_events},
          {"steps_skipped", result.steps_skipped},
          {"margin_replays", result.margin_replays},
          {"devices", devices},
          {"largest_batch_scale", batch_json(result.batch)},
          {"fidelity", {{"exact", all_exact}, {"devices", fidelity_devices}}},
          {"notes", notes},
          {"problems", result.problems}};
}

void write_whatif_text(const WhatIfRequest& request, const WhatIfResult& result,
                       std::ostream& out) {
  out << "whatif: " << request.path << "\n";
  if (!result.changed) {
    out << "change: none (the recorded run replayed through the allocator's model)\n";
  } else {
    out << "change: " << changes_text(request.options) << "\n";
  }
  for (const std::string& n : role_change_notes(request.options)) out << "note: " << n << "\n";
  for (const std::string& n : checkpoint_lines(result)) out << "note: " << n << "\n";
  if (result.set_to_none) {
    const allocator::SetToNoneChange& c = *result.set_to_none;
    out << "set to none: the gradients freed at the ends of " << c.steps << " optimizer steps ("
        << c.gradients_freed << " blocks); " << c.kept
        << " of the backwards' temporaries kept as the gradients made anew (their bytes count "
           "as temporaries by role)\n";
  }
  if (result.batch_from) {
    const WhatIfResult::BatchFrom& b = *result.batch_from;
    out << "batch from: " << b.trace << ": its batch x" << factor_text(b.ratio)
        << " of this run's (by their inputs); " << b.matched << " of " << b.requests
        << " requests matched there and fitted\n";
  }
  for (const std::string& k : result.conf.not_modelled)
    out << "note: not modelled: " << k << " (PyTorch would follow it; the prediction does not)\n";
  for (const std::string& k : result.conf.no_effect)
    out << "note: " << k << " changes nothing the model replays\n";
  if (result.cuda_graph_captures > 0)
    out << "note: " << result.cuda_graph_captures
        << " CUDA graph captures: their private pools are not followed\n";
  for (const std::string& p : result.problems) out << "note: left out of the trace: " << p << "\n";

  for (const DevicePrediction& p : result.devices) {
    const DeviceReplayResult& f = p.fidelity;
    const bool exact = f.exact();
    out << "\ndevice " << p.device;
    if (p.total_bytes != 0) out << " (" << human_bytes(p.total_bytes) << ")";
    out << "\n";
    if (p.outside_bytes > 0)
      out << "  held outside PyTorch's allocator, as the recording's "
          << (p.fidelity.recorded_capacity_bound != UINT64_MAX ? "failed cudaMalloc shows"
                                                               : "samples of the driver show")
          << ": " << human_bytes(p.outside_bytes) << "; the allocator may hold "
          << human_bytes(p.capacity) << "\n";
    out << "  " << std::left << std::setw(21) << "" << std::setw(14) << "recorded"
        << (exact ? "predicted" : "predicted (not exact)") << "\n";
    out << "  " << std::setw(21) << "max allocated" << std::setw(14)
        << human_bytes(p.recorded_max_allocated) << human_bytes(p.predicted_max_allocated) << "\n";
    out << "  " << std::setw(21) << "max reserved" << std::setw(14)
        << human_bytes(p.recorded_max_reserved) << human_bytes(p.predicted_max_reserved) << "\n";
    if (result.roles_recorded) {
      out << "  at the highest allocated, by role:\n";
      for (std::size_t r = 0; r < kRoleCount; ++r) {
        if (p.recorded_roles[r] == 0 && p.predicted_roles[r] == 0) continue;
        out << "    " << std::setw(17) << role_name(static_cast<Role>(r)) << std::setw(14)
            << human_bytes(p.recorded_roles[r]) << human_bytes(p.predicted_roles[r]) << "\n";
      }
    }
    out << std::right;
    out << "  verdict: ";
    if (p.past_caught_failure) {
      out << "not predicted: the request of " << human_bytes(p.served_failure_size)
          << " that failed in the recording is served, but the program caught that failure and "
             "went on ("
          << p.requests_after_served_failure
          << " more request(s), made in answer to it: a program that fills the device until a "
             "request fails asks for more where more fits); whether the run fits is not in the "
             "trace";
    } else if (p.close) {
      out << "too close to call: reserved at most " << human_bytes(p.predicted_max_reserved)
          << " of the " << human_bytes(p.capacity)
          << " the allocator may hold, less than the model's margin ("
          << allocator::kVerdictMarginPercent << " %, "
          << human_bytes(allocator::verdict_margin(p.capacity)) << ") to spare";
    } else if (p.fits) {
      out << "fits";
      if (p.total_bytes == 0 && p.capacity == UINT64_MAX)
        out << " (the device's memory is not in the trace: give --device-memory)";
      else
        out << " in " << human_bytes(p.total_bytes != 0 ? p.total_bytes : p.capacity);
      if (p.fits_with_margin)
        out << ", with the model's margin (" << allocator::kVerdictMarginPercent << " %, "
            << human_bytes(allocator::verdict_margin(p.capacity))
            << ") to spare: it reserves up to " << human_bytes(p.predicted_max_reserved)
            << " of the " << human_bytes(p.capacity)
            << " the allocator may hold, and fits in that less the margin too (reserving "
            << human_bytes(p.margin_max_reserved) << ", its cache released on the way)";
    } else {
      out << "does not fit: a request of " << human_bytes(p.first_failed_size.value_or(0))
          << " fails";
    }
    if (request.options.empty_cache_at)
      out << "; torch.cuda.empty_cache() added " << p.empty_cache_added << " time(s)"
          << (p.empty_cache_added == 0 ? " (that never ended in the trace: nothing changed)" : "");
    if (p.recorded_failures_served > 0 && !p.past_caught_failure)
      out << "; " << p.recorded_failures_served
          << " request(s) that failed in the recording are served (what the program did "
             "after its failure is not in the trace)";
    out << "\n";
    if (exact) {
      out << "  fidelity: exact: the unchanged replay reproduced the recording ("
          << f.matched_segments
          << " segments in order, the highest reserved and allocated to the byte)\n";
    } else {
      out << "  fidelity: the model did NOT reproduce the recorded run, so no prediction here is "
             "exact:\n";
      for (const std::string& why : inexact_reasons(f)) out << "    " << why << "\n";
    }
    for (const auto& [gap, count] : p.gaps) {
      if (allocator::always_present(gap)) continue;
      out << "  " << allocator::describe(gap) << " (met " << count << " times)\n";
    }
  }
  const allocator::BatchSearch& b = result.batch;
  if (!b.not_run.empty()) {
    out << "\nlargest batch that fits: not searched: " << b.not_run << "\n";
  } else if (b.ran) {
    out << "\nlargest batch that fits: ";
    if (!b.largest) {
      out << "none: even x" << factor_text(allocator::kBatchStep) << " of the recorded batch fails";
    } else if (b.capped) {
      out << "x" << factor_text(*b.largest) << " of the recorded batch fits, the most searched";
    } else {
      out << "x" << factor_text(*b.largest) << " of the recorded batch";
      if (b.smallest_failing && *b.smallest_failing - *b.largest > allocator::kBatchStep)
        out << " (x" << factor_text(*b.smallest_failing) << " does not; between them unsearched)";
    }
    out << " (with " << allocator::kVerdictMarginPercent
        << " % of what the allocator may hold to spare; searched in steps of x"
        << factor_text(allocator::kBatchStep) << ", " << b.replays << " replays";
    if (!request.options.device_memory) out << ", on the recorded device";
    out << ")\n";
  }
}

}  // namespace gmt::analyzer
