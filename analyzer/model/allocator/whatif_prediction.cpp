// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/allocator/whatif_prediction.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "analyzer/model/allocator/batch_fit.h"
#include "analyzer/model/input/mapped_file.h"

namespace gmt::analyzer::allocator {
namespace {

bool batch_roles_present(const BlockRoles& roles) {
  return roles.any(Role::kActivation) || roles.any(Role::kTemporary) || roles.any(Role::kInput);
}

// The changes by role need the roles, and blocks of the roles they change.
void check_roles(const WhatIfOptions& options, const BlockRoles& roles) {
  if (options.set_to_none && !roles.recorded)
    throw WhatIfError(
        "--set-to-none needs each block's role, and this trace has none (PyTorch's roles hooks "
        "did not run: GPUMEMTRACE_ROLES=0, or not a Python program)");
  if (!options.checkpoint.empty() && !roles.recorded)
    throw WhatIfError(
        "--checkpoint needs each block's module and role, and this trace has none (PyTorch's "
        "roles hooks did not run: GPUMEMTRACE_ROLES=0, or not a Python program)");
  if (!changes_roles(options)) return;
  if (!roles.recorded)
    throw WhatIfError(
        "--batch-scale, --shard and --dtype need each block's role, and this trace has none "
        "(PyTorch's roles hooks did not run: GPUMEMTRACE_ROLES=0, or not a Python program)");
  if (options.batch_scale && !batch_roles_present(roles))
    throw WhatIfError(
        "--batch-scale: no block of the trace is an activation, temporary or input: nothing "
        "scales with the batch");
  if (options.shard) {
    const ShardStage stage = options.shard->stage;
    const bool any = roles.any(Role::kOptimizerState) ||
                     (stage >= ShardStage::kZero2 && roles.any(Role::kGradient)) ||
                     (stage >= ShardStage::kZero3 && roles.any(Role::kParameter));
    if (!any)
      throw WhatIfError(
          "--shard: no block of the trace is of a role this stage divides (optimizer state; "
          "gradients from zero2; parameters from zero3)");
  }
  for (const auto& [role, factor] : options.dtype) {
    if (!roles.any(role))
      throw WhatIfError(std::string("--dtype: no block of the trace is ") + role_name(role));
  }
}

// Whether every device fits at `n` batch steps, the other changes as they are.
class BatchProbe {
 public:
  BatchProbe(const ReplayEvents& events, const ReplayOptions& changed, const WhatIfOptions& options,
             BatchSearch& search)
      : events_(events), changed_(changed), options_(options), search_(search) {}

  bool fits(uint64_t n) {
    WhatIfOptions o = options_;
    o.batch_scale = static_cast<double>(n) * kBatchStep;
    ReplayOptions r = changed_;
    r.scale = role_scales(o);
    r.batch_scale = *o.batch_scale;
    r.stop_at_failure = true;
    ++search_.replays;
    TraceReplayResult result = events_.replay(r);
    // A scale that gets past a failure the program caught is not known to fit (its later
    // requests answered the failure): not one the search may give.
    const bool fits =
        std::all_of(result.devices.begin(), result.devices.end(), [](const DeviceReplayResult& d) {
          return d.failed_requests == 0 && !d.verdict_past_caught_failure();
        });
    if (fits && n > best_) {
      best_ = n;
      search_.at_largest = std::move(result);
    }
    return fits;
  }

 private:
  const ReplayEvents& events_;
  const ReplayOptions& changed_;
  const WhatIfOptions& options_;
  BatchSearch& search_;
  uint64_t best_ = 0;
};

// How close the search brackets the largest batch at `n` steps: one step (1/32 of the recorded
// batch) up to twice the recorded batch, then 1/64 of the scale itself, within the model's
// margin: bisecting x88 to 1/32 took seven replays more than to 1/64 of it.
uint64_t batch_tolerance(uint64_t n) {
  return std::max<uint64_t>(1, n / kBatchRelativePrecision);
}

// From `start` steps, steps growing twofold up (while it fits) or down (while it does not),
// the first as long as the tolerance at `start`, to a scale that fits and one that does not,
// then bisection between them on the grid of kBatchStep until they are within the tolerance.
// A good guess costs two replays.
void search_batch(BatchProbe& probe, BatchSearch& search, uint64_t start) {
  search.ran = true;
  const uint64_t most = static_cast<uint64_t>(kLargestBatchSearched / kBatchStep);
  uint64_t lo = 0;  // fits (0: none known)
  uint64_t hi = 0;  // does not (0: none known)
  const uint64_t first_step = batch_tolerance(start);
  if (probe.fits(start)) {
    lo = start;
    for (uint64_t step = first_step;; step *= 2) {
      if (lo == most) {
        search.capped = true;
        search.largest = static_cast<double>(lo) * kBatchStep;
        return;
      }
      const uint64_t n = std::min(most, lo + step);
      if (!probe.fits(n)) {
        hi = n;
        break;
      }
      lo = n;
    }
  } else {
    hi = start;
    for (uint64_t step = first_step;; step *= 2) {
      if (hi == 1) return;  // not even one step fits
      const uint64_t n = hi > step ? hi - step : 1;
      if (probe.fits(n)) {
        lo = n;
        break;
      }
      hi = n;
    }
  }
  while (hi - lo > batch_tolerance(lo)) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (probe.fits(mid) ? lo : hi) = mid;
  }
  search.largest = static_cast<double>(lo) * kBatchStep;
  search.smallest_failing = static_cast<double>(hi) * kBatchStep;
}

}  // namespace

uint64_t verdict_margin(uint64_t capacity) {
  return capacity == UINT64_MAX ? 0 : capacity / 100 * kVerdictMarginPercent;
}

bool too_close(uint64_t max_reserved, uint64_t capacity) {
  return capacity != UINT64_MAX && max_reserved > capacity - verdict_margin(capacity);
}

const char* verdict_text(bool fits, bool close) {
  return fits ? "fits" : close ? "too close to call" : "does not fit";
}

ReplayOptions with_margin(ReplayOptions options) {
  for (auto& [device, capacity] : options.capacity) capacity -= verdict_margin(capacity);
  return options;
}

Capacity whatif_capacity(const DeviceReplayResult& d, std::optional<uint64_t> device_memory) {
  Capacity c;
  c.total_bytes = device_memory.value_or(d.total_bytes);
  const uint64_t bound = d.recorded_capacity_bound;
  if (bound != UINT64_MAX && d.total_bytes != 0 && bound < d.total_bytes)
    c.outside_bytes = d.total_bytes - bound;
  // Without a failure, the driver's samples tell it (a failure tells it exactly).
  if (bound == UINT64_MAX) c.outside_bytes = d.sampled_outside_bytes;
  if (c.total_bytes != 0) {
    c.capacity = c.total_bytes - std::min(c.total_bytes, c.outside_bytes);
  } else if (bound != UINT64_MAX) {
    c.capacity = bound;  // the device's size not recorded: the failures are all there is
  }
  return c;
}

// A prediction within the margin at the full capacity is replayed once more with the margin
// taken off: where no request fails there, the run fits with the margin to spare (the verdict
// the largest batch's search gives its candidates). Only then: one replay more, for the runs
// that fill the device.
void recheck_with_margin(WhatIfResult& out, const ReplayOptions& changed,
                         const ReplayEvents* events, std::span<const uint8_t> bytes,
                         const std::string& name, format::PageAccess pages) {
  if (std::none_of(out.devices.begin(), out.devices.end(),
                   [](const DevicePrediction& p) { return p.close; }))
    return;
  ReplayOptions spared = with_margin(changed);
  spared.stop_at_failure = true;
  const TraceReplayResult again =
      events ? events->replay(spared) : replay_trace(bytes, name, spared, pages);
  ++out.margin_replays;
  for (DevicePrediction& p : out.devices) {
    if (!p.close) continue;
    const auto it = std::find_if(again.devices.begin(), again.devices.end(),
                                 [&](const DeviceReplayResult& d) { return d.device == p.device; });
    if (it == again.devices.end() || it->failed_requests != 0 || it->verdict_past_caught_failure())
      continue;
    p.close = false;
    p.fits_with_margin = true;
    p.margin_max_reserved = it->stats.max_reserved_bytes;
  }
}

BatchSearch search_largest_batch(const ReplayEvents& events, const ReplayOptions& changed,
                                 const WhatIfOptions& options, std::optional<double> guess) {
  BatchSearch search;
  const ReplayOptions spared = with_margin(changed);
  BatchProbe probe(events, spared, options, search);
  const double most = kLargestBatchSearched / kBatchStep;
  const double steps = std::clamp(std::floor(guess.value_or(1.0) / kBatchStep), 1.0, most);
  search_batch(probe, search, static_cast<uint64_t>(steps));
  return search;
}

std::optional<double> guess_batch_scale(const DeviceReplayResult& unchanged, uint64_t capacity) {
  const auto& roles = unchanged.roles_at_peak;
  const auto at = [&](Role r) { return static_cast<double>(roles[static_cast<std::size_t>(r)]); };
  const double batch = at(Role::kActivation) + at(Role::kTemporary) + at(Role::kInput);
  double allocated = 0;
  for (std::size_t i = 0; i < roles.size(); ++i) {
    if (i != static_cast<std::size_t>(Role::kAllocatorCache))
      allocated += static_cast<double>(roles[i]);
  }
  const uint64_t reserved = unchanged.stats.max_reserved_bytes;
  if (batch <= 0 || allocated <= 0 || reserved == 0 || capacity == UINT64_MAX) return std::nullopt;
  const double usable = static_cast<double>(capacity) * allocated / static_cast<double>(reserved);
  return std::max(kBatchStep, (usable - (allocated - batch)) / batch);
}

std::string parse_shard(const std::string& text, Shard& out) {
  const auto colon = text.find(':');
  const std::string ranks = text.substr(0, colon);
  const std::string stage = colon == std::string::npos ? "zero1" : text.substr(colon + 1);
  char* end = nullptr;
  const unsigned long n = ranks.empty() ? 0 : std::strtoul(ranks.c_str(), &end, 10);
  if (ranks.empty() || *end != '\0' || n < 2 || n > 1u << 20)
    return "expected N:STAGE, N ranks from 2 (8, 8:zero2, 64:zero3)";
  if (stage == "zero1") {
    out.stage = ShardStage::kZero1;
  } else if (stage == "zero2") {
    out.stage = ShardStage::kZero2;
  } else if (stage == "zero3" || stage == "fsdp") {
    out.stage = ShardStage::kZero3;
  } else {
    return "expected a stage zero1, zero2, zero3 or fsdp after the ranks";
  }
  out.ranks = static_cast<uint32_t>(n);
  return {};
}

std::string parse_dtype(const std::string& text, Role& role, double& factor) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) return "expected ROLE=DTYPE (activation=bf16)";
  const auto r = role_of_name(text.substr(0, eq));
  if (!r) return "unknown role '" + text.substr(0, eq) + "'";
  const std::string dtype = text.substr(eq + 1);
  if (dtype == "bf16" || dtype == "fp16" || dtype == "bfloat16" || dtype == "float16") {
    factor = 0.5;
  } else if (dtype == "fp8") {
    factor = 0.25;
  } else if (dtype == "fp32" || dtype == "float32") {
    factor = 1.0;
  } else {
    return "expected a dtype bf16, fp16, fp8 or fp32, got '" + dtype + "'";
  }
  role = *r;
  return {};
}

std::array<double, kRoleCount> role_scales(const WhatIfOptions& options) {
  std::array<double, kRoleCount> s = ReplayOptions::unit_scale();
  const auto at = [&](Role r) -> double& { return s[static_cast<std::size_t>(r)]; };
  if (options.batch_scale) {
    for (const Role r : {Role::kActivation, Role::kTemporary, Role::kInput})
      at(r) *= *options.batch_scale;
  }
  if (options.shard) {
    const double part = 1.0 / options.shard->ranks;
    at(Role::kOptimizerState) *= part;
    if (options.shard->stage >= ShardStage::kZero2) at(Role::kGradient) *= part;
    if (options.shard->stage >= ShardStage::kZero3) at(Role::kParameter) *= part;
  }
  for (const auto& [role, factor] : options.dtype) at(role) *= factor;
  return s;
}

bool changes_roles(const WhatIfOptions& options) {
  return options.batch_scale.has_value() || options.shard.has_value() || !options.dtype.empty();
}

WhatIfResult predict_whatif(std::span<const uint8_t> bytes, const std::string& name,
                            const WhatIfOptions& options, format::PageAccess pages) {
  WhatIfResult out;
  if (options.alloc_conf) out.conf = parse_alloc_conf(*options.alloc_conf);
  const BlockRoles roles =
      read_block_roles(bytes, name, pages, !options.checkpoint.empty() || options.batch_from);
  out.roles_recorded = roles.recorded;
  check_roles(options, roles);
  if (options.batch_from && !roles.recorded)
    throw WhatIfError(
        "--batch-from needs each block's module and role, and this trace has none (PyTorch's "
        "roles hooks did not run: GPUMEMTRACE_ROLES=0, or not a Python program)");
  ReplayOptions base;
  base.roles = &roles;
  // The events a search or a rewrite replays, gathered in the unchanged replay's own pass.
  const bool decode = options.largest_batch || options.batch_from || options.set_to_none ||
                      !options.checkpoint.empty();
  std::optional<ReplayEventsCollector> collector;
  const auto collect = [&](uint64_t expected_records) -> RecordTap {
    collector.emplace(expected_records);
    return [&](const format::Record& r) { collector->add(r); };
  };
  TraceReplayResult unchanged = replay_trace(
      bytes, name, base, pages, decode ? collect : std::function<RecordTap(uint64_t)>{});
  out.block_events = unchanged.block_events;
  out.cuda_graph_captures = unchanged.cuda_graph_captures;
  out.history_dropped = unchanged.history_dropped;
  out.problems = unchanged.problems;
  out.changed = options.alloc_conf.has_value() || options.device_memory.has_value() ||
                options.empty_cache_at.has_value() || !options.checkpoint.empty() ||
                options.set_to_none || changes_roles(options);

  ReplayOptions changed;
  changed.alloc_conf = options.alloc_conf;
  changed.what_if = true;
  changed.roles = &roles;
  changed.scale = role_scales(options);
  changed.batch_scale = options.batch_scale.value_or(1.0);
  changed.empty_cache_at = options.empty_cache_at;
  for (const DeviceReplayResult& d : unchanged.devices) {
    DevicePrediction p;
    p.device = d.device;
    p.recorded_max_allocated = d.recorded_max_allocated;
    p.recorded_max_reserved = d.recorded_max_reserved;
    p.fidelity = d;
    const Capacity c = whatif_capacity(d, options.device_memory);
    p.total_bytes = c.total_bytes;
    p.outside_bytes = c.outside_bytes;
    p.capacity = c.capacity;
    if (p.capacity != UINT64_MAX) changed.capacity[d.device] = p.capacity;
    // Without a change, the prediction is the unchanged replay's.
    p.predicted_max_allocated = d.stats.max_allocated_bytes;
    p.predicted_max_reserved = d.stats.max_reserved_bytes;
    p.fits = d.failed_requests == 0;
    p.first_failed_size = d.first_failed_size;
    p.gaps = d.gaps;
    p.recorded_roles = d.recorded_roles_at_peak;
    p.predicted_roles = d.roles_at_peak;
    out.devices.push_back(std::move(p));
  }
  // The events read once: where the search replays many times, or checkpointing changes them.
  std::optional<ReplayEvents> events;
  if (collector) events = collector->finish(unchanged.history_dropped, unchanged.problems);
  const auto decoded = [&]() -> const ReplayEvents& {
    if (!events) events = ReplayEvents::read(bytes, name, pages, unchanged.block_events);
    return *events;
  };
  std::optional<BatchFit> fit;
  if (options.batch_from) {
    MappedFile second_file(*options.batch_from);
    const ReplayEvents second =
        ReplayEvents::read(second_file.bytes(), *options.batch_from, second_file.page_access());
    const BlockRoles second_roles =
        read_block_roles(second_file.bytes(), *options.batch_from, second_file.page_access(), true);
    if (!second_roles.recorded)
      throw WhatIfError("--batch-from: " + *options.batch_from +
                        " has no roles (PyTorch's roles hooks did not run there)");
    fit = fit_batch(decoded(), roles, second, second_roles);
    changed.batch_slopes = &fit->slopes;
    out.batch_from =
        WhatIfResult::BatchFrom{*options.batch_from, fit->ratio, fit->requests, fit->matched};
  }
  if (options.set_to_none) {
    SetToNoneChange change;
    events = decoded().gradients_set_to_none(roles, change);
    out.set_to_none = change;
  }
  if (!options.checkpoint.empty()) {
    events = decoded().checkpointed(roles, options.checkpoint, out.checkpointed);
    if (std::all_of(out.checkpointed.begin(), out.checkpointed.end(),
                    [](const CheckpointedModule& m) { return m.forwards == 0; }))
      throw WhatIfError(
          "--checkpoint: no activation made in the forward of " +
          (options.checkpoint.size() == 1 ? "'" + options.checkpoint[0] + "'"
                                          : std::string("any of the modules")) +
          " is released by a backward in this trace (no module of that name, a module path "
          "as `by_module` lists them, or no backward)");
  }
  if (options.largest_batch) {
    const bool capacity_known = !changed.capacity.empty();
    if (!roles.recorded) {
      out.batch.not_run = "the trace has no roles (PyTorch's roles hooks did not run)";
    } else if (!batch_roles_present(roles)) {
      out.batch.not_run = "no block of the trace is an activation, temporary or input";
    } else if (!capacity_known) {
      out.batch.not_run = "the device's memory is not in the trace: give --device-memory";
    } else {
      std::optional<double> guess;
      for (const DeviceReplayResult& d : unchanged.devices) {
        const auto c = changed.capacity.find(d.device);
        if (c == changed.capacity.end()) continue;
        if (const auto g = guess_batch_scale(d, c->second - verdict_margin(c->second));
            g && (!guess || *g < *guess))
          guess = g;
      }
      out.batch = search_largest_batch(decoded(), changed, options, guess);
    }
  }
  if (!out.changed) return out;

  // One replay streams the trace (its memory bounded by the live blocks, not the events);
  // events decoded already are replayed skipping the steps that repeat.
  const TraceReplayResult what_if =
      events ? events->replay(changed) : replay_trace(bytes, name, changed, pages);
  out.steps_skipped = what_if.steps_skipped;
  for (DevicePrediction& p : out.devices) {
    const auto it = std::find_if(what_if.devices.begin(), what_if.devices.end(),
                                 [&](const DeviceReplayResult& d) { return d.device == p.device; });
    if (it == what_if.devices.end()) continue;
    p.predicted_max_allocated = it->stats.max_allocated_bytes;
    p.predicted_max_reserved = it->stats.max_reserved_bytes;
    p.fits = it->failed_requests == 0;
    p.close = p.fits && too_close(p.predicted_max_reserved, p.capacity);
    p.first_failed_size = it->first_failed_size;
    p.recorded_failures_served = it->recorded_failures_served;
    p.past_caught_failure = it->verdict_past_caught_failure();
    p.requests_after_served_failure = it->requests_after_served_failure;
    p.served_failure_size = it->first_served_failure_size;
    p.empty_cache_added = it->empty_cache_added;
    p.gaps = it->gaps;
    p.predicted_roles = it->roles_at_peak;
  }
  recheck_with_margin(out, changed, events ? &*events : nullptr, bytes, name, pages);
  return out;
}

WhatIfResult predict_whatif_file(const std::string& path, const WhatIfOptions& options) {
  MappedFile file(path);
  return predict_whatif(file.bytes(), path, options, file.page_access());
}

}  // namespace gmt::analyzer::allocator
