// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/allocator/remedies.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "analyzer/model/allocator/block_roles.h"
#include "analyzer/model/allocator/replay_events.h"
#include "analyzer/model/allocator/trace_replay.h"
#include "analyzer/model/allocator/whatif_prediction.h"
#include "analyzer/model/input/mapped_file.h"
#include "analyzer/model/worker_pool.h"

namespace gmt::analyzer::allocator {
namespace {

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// Whether a replay got past a failure the program caught on any device
// (DeviceReplayResult::verdict_past_caught_failure()).
bool past_caught_failure(const TraceReplayResult& result) {
  return std::any_of(result.devices.begin(), result.devices.end(),
                     [](const DeviceReplayResult& d) { return d.verdict_past_caught_failure(); });
}

constexpr const char* kPastCaughtFailure =
    "the program caught its failure and went on, and what it asked for after the failure "
    "answered it: nothing is predicted past it";

bool no_request_failed(const TraceReplayResult& result) {
  return std::all_of(result.devices.begin(), result.devices.end(),
                     [](const DeviceReplayResult& d) { return d.failed_requests == 0; });
}

// No request failed, but some device kept less than the verdict's margin free.
bool within_margin(const TraceReplayResult& result, const std::map<int, uint64_t>& capacity) {
  if (!no_request_failed(result)) return false;
  return std::any_of(
      result.devices.begin(), result.devices.end(), [&](const DeviceReplayResult& d) {
        const auto c = capacity.find(d.device);
        return c != capacity.end() && too_close(d.stats.max_reserved_bytes, c->second);
      });
}

// A candidate's figures from its replay (under `capacity`, each device's): it fits where no
// request failed and it kept the verdict's margin free (too_close()), or, within the margin, it
// fits as well with the margin taken off the capacity (`fits_with_margin`: the largest batch's
// search judges so).
Remedy remedy_of(const TraceReplayResult& result, const std::map<int, uint64_t>& capacity,
                 int device, uint64_t recorded_max_reserved, std::string text, std::string whatif,
                 std::string note, bool fits_with_margin = false) {
  Remedy remedy;
  remedy.change = std::move(text);
  remedy.whatif = std::move(whatif);
  remedy.note = std::move(note);
  remedy.fits = no_request_failed(result);
  for (const DeviceReplayResult& d : result.devices) {
    const auto c = capacity.find(d.device);
    if (remedy.fits && !fits_with_margin && c != capacity.end() &&
        too_close(d.stats.max_reserved_bytes, c->second)) {
      remedy.fits = false;
      remedy.close = true;
    }
  }
  remedy.past_caught_failure = past_caught_failure(result);
  uint64_t served = 0;
  for (const DeviceReplayResult& d : result.devices) {
    if (d.device != device) continue;
    remedy.predicted_max_reserved_bytes = d.stats.max_reserved_bytes;
    remedy.predicted_max_allocated_bytes = d.stats.max_allocated_bytes;
    remedy.saves_bytes = static_cast<int64_t>(recorded_max_reserved) -
                         static_cast<int64_t>(d.stats.max_reserved_bytes);
    served = d.recorded_failures_served;
  }
  if (remedy.close)
    remedy.note = "too close to call: less than " + std::to_string(kVerdictMarginPercent) +
                  " % of what the allocator may hold to spare" +
                  (remedy.note.empty() ? "" : "; " + remedy.note);
  if (remedy.fits && fits_with_margin)
    remedy.note = "within " + std::to_string(kVerdictMarginPercent) +
                  " % of what the allocator may hold, and it fits with that taken off too (its "
                  "cache released on the way)" +
                  (remedy.note.empty() ? "" : "; " + remedy.note);
  if (remedy.fits && served > 0 && remedy.note.empty())
    remedy.note =
        "the request that failed is served (what the program did after its failure is not in "
        "the trace)";
  return remedy;
}

// The candidates of one trace, each its own replays of the events read once: they run side by
// side on the analyzer's workers and each gives its remedy (none: nothing to offer).
class Candidates {
 public:
  Candidates(const ReplayEvents& events, const ReplayOptions& base, const Remedies& out)
      : events_(events), base_(base), out_(out) {}

  // The change predicted (its replay stops at its first failure: a change that does not fit is
  // not offered for its figures). `replays` counts it.
  Remedy predict(const WhatIfOptions& change, std::string text, std::string whatif,
                 std::string note, uint32_t& replays) const {
    ReplayOptions r = base_;
    r.alloc_conf = change.alloc_conf;
    r.scale = role_scales(change);
    return judged(events_, r, std::move(text), std::move(whatif), std::move(note), replays);
  }
  // `events` replayed under `r`; within the margin, once more with the margin taken off.
  Remedy judged(const ReplayEvents& events, ReplayOptions r, std::string text, std::string whatif,
                std::string note, uint32_t& replays) const {
    r.stop_at_failure = true;
    ++replays;
    const TraceReplayResult result = events.replay(r);
    bool spare = false;
    if (within_margin(result, r.capacity)) {
      ++replays;
      spare = no_request_failed(events.replay(with_margin(r)));
    }
    return remedy_of(result, base_.capacity, out_.device, out_.recorded_max_reserved_bytes,
                     std::move(text), std::move(whatif), std::move(note), spare);
  }
  Remedy of(const TraceReplayResult& result, std::string text, std::string whatif,
            std::string note) const {
    return remedy_of(result, base_.capacity, out_.device, out_.recorded_max_reserved_bytes,
                     std::move(text), std::move(whatif), std::move(note));
  }
  const ReplayEvents& events() const { return events_; }
  const ReplayOptions& base() const { return base_; }

 private:
  const ReplayEvents& events_;
  const ReplayOptions& base_;
  const Remedies& out_;
};

struct Candidate {
  std::optional<Remedy> remedy;
  uint32_t replays = 0;
};
using CandidateWork = std::function<void(Candidate&)>;

// The fewest ranks (of 2, 4, 8) over which sharding at `stage` fits; 8 when none does, to show
// how far it gets. 8 first: more ranks never hold more, so where 8 does not fit, neither do
// fewer (one replay, not three).
CandidateWork shard_remedy(const Candidates& c, ShardStage stage, const char* stage_name) {
  return [&c, stage, stage_name](Candidate& out) {
    const auto over = [&](uint32_t ranks) {
      WhatIfOptions o;
      o.shard = Shard{ranks, stage};
      return c.predict(o, "shard over " + std::to_string(ranks) + " ranks (" + stage_name + ")",
                       "--shard " + std::to_string(ranks) + ":" + stage_name,
                       "by formula: communication buffers not modelled", out.replays);
    };
    Remedy most = over(8);
    if (most.fits) {
      for (const uint32_t ranks : {2u, 4u}) {
        Remedy r = over(ranks);
        if (r.fits) {
          out.remedy = std::move(r);
          return;
        }
      }
    }
    out.remedy = std::move(most);
  };
}

// The first `depth` components of a module path ("layer1.0" of "layer1.0.conv1" at 2); empty
// when it has fewer.
std::string path_prefix(const std::string& name, std::size_t depth) {
  std::size_t end = 0;
  for (std::size_t d = 0; d < depth; ++d) {
    if (d > 0) {
      if (end == name.size()) return {};
      ++end;  // past the dot
    }
    end = name.find('.', end);
    if (end == std::string::npos) end = name.size();
  }
  return name.substr(0, end);
}

// The modules worth checkpointing: the first level of module paths (from the root's children
// down) where at least three modules each made 5 % or more of the activations' bytes (a
// network's repeated blocks: layer1..layer4, model.layers.0..31), those; none when no level has.
std::vector<std::string> modules_to_checkpoint(const BlockRoles& roles,
                                               const std::vector<uint64_t>& activation_bytes) {
  uint64_t total = 0;
  for (const uint64_t b : activation_bytes) total += b;
  if (total == 0) return {};
  for (std::size_t depth = 1; depth <= 4; ++depth) {
    std::map<std::string, uint64_t> by_path;
    for (std::size_t id = 1; id < roles.module_names.size() && id < activation_bytes.size(); ++id) {
      const std::string path = path_prefix(roles.module_names[id], depth);
      if (!path.empty()) by_path[path] += activation_bytes[id];
    }
    std::vector<std::string> chosen;
    for (const auto& [path, bytes] : by_path) {
      if (bytes * 20 >= total) chosen.push_back(path);
    }
    if (chosen.size() >= 3) return chosen;
  }
  return {};
}

// Checkpointing the modules worth it, all at once.
CandidateWork checkpoint_remedy(const Candidates& c, const BlockRoles& roles,
                                std::vector<std::string> modules) {
  return [&c, &roles, modules = std::move(modules)](Candidate& out) {
    std::vector<CheckpointedModule> changed;
    const ReplayEvents events = c.events().checkpointed(roles, modules, changed);
    std::string listed;
    std::string whatif;
    for (const std::string& m : modules) {
      listed += (listed.empty() ? "" : ", ") + m;
      whatif += (whatif.empty() ? "" : " ") + ("--checkpoint " + m);
    }
    out.remedy =
        c.judged(events, c.base(), "checkpoint " + listed, whatif,
                 "torch.utils.checkpoint around each; recomputed in backward", out.replays);
  };
}

// The largest batch that fits, searched from a guess: the batch's roles at the run's highest
// allocated (a replay with the roles, no limit) grown into what the device leaves them.
CandidateWork batch_remedy(const Candidates& c, const Remedies& remedies) {
  return [&c, &remedies](Candidate& out) {
    ReplayOptions unlimited = c.base();
    unlimited.capacity.clear();
    ++out.replays;
    const TraceReplayResult run = c.events().replay(unlimited);
    std::optional<double> guess;
    for (const DeviceReplayResult& d : run.devices) {
      if (d.device != remedies.device) continue;
      if (const auto cap = c.base().capacity.find(d.device); cap != c.base().capacity.end())
        guess = guess_batch_scale(d, cap->second - verdict_margin(cap->second));
    }
    const BatchSearch search = search_largest_batch(c.events(), c.base(), {}, guess);
    out.replays += search.replays;
    if (!search.largest || *search.largest >= 1 || !search.at_largest) return;
    out.remedy =
        c.of(*search.at_largest, "batch <= x" + number(*search.largest) + " of the recorded",
             "--batch-scale " + number(*search.largest),
             "the largest that fits, in steps of x" + number(kBatchStep));
  };
}

}  // namespace

Remedies find_remedies(std::span<const uint8_t> bytes, const std::string& name,
                       std::optional<uint64_t> device_memory, format::PageAccess pages) {
  Remedies out;
  const TraceReplayResult unchanged = replay_trace(bytes, name, {}, pages);
  ++out.replays;
  if (unchanged.block_events == 0) {
    out.none_because = "no PyTorch block events in the trace";
    return out;
  }
  out.applicable = true;
  for (const DeviceReplayResult& d : unchanged.devices) {
    if (!d.exact()) {
      out.none_because = "the allocator's model did not reproduce the recorded run on device " +
                         std::to_string(d.device) +
                         " (see whatif): its predictions would not be exact";
      return out;
    }
  }
  // On the recorded device, a run that did not fail fits: nothing more to replay.
  if (!device_memory &&
      std::all_of(unchanged.devices.begin(), unchanged.devices.end(),
                  [](const DeviceReplayResult& d) { return d.recorded_ooms == 0; })) {
    out.none_because = "the run fits: nothing to remedy";
    return out;
  }
  ReplayOptions base;
  base.what_if = true;
  bool capacity_known = false;
  for (const DeviceReplayResult& d : unchanged.devices) {
    const Capacity c = whatif_capacity(d, device_memory);
    if (c.capacity != UINT64_MAX) {
      base.capacity[d.device] = c.capacity;
      capacity_known = true;
    }
  }
  if (!capacity_known) {
    out.none_because = "the device's memory is not in the trace: give --device-memory";
    return out;
  }
  // From here on each replay reads the events decoded once.
  const ReplayEvents events = ReplayEvents::read(bytes, name, pages, unchanged.block_events);
  // Does the run fit as it is (on this device)?
  const TraceReplayResult as_is = events.replay(base);
  ++out.replays;
  for (const DeviceReplayResult& d : as_is.devices) {
    if (d.failed_requests > 0) {
      out.device = d.device;
      break;
    }
  }
  if (out.device < 0) {
    out.none_because = past_caught_failure(as_is)
                           ? kPastCaughtFailure +
                                 std::string(" (on this device the request that failed is served)")
                           : "the run fits: nothing to remedy";
    return out;
  }
  for (const DeviceReplayResult& d : unchanged.devices) {
    if (d.device != out.device) continue;
    out.total_bytes = whatif_capacity(d, device_memory).total_bytes;
    out.recorded_max_reserved_bytes = d.recorded_max_reserved;
  }
  const BlockRoles roles = read_block_roles(bytes, name, pages, true);
  base.roles = &roles;
  const bool expandable_on =
      std::any_of(unchanged.devices.begin(), unchanged.devices.end(),
                  [](const DeviceReplayResult& d) { return d.expandable_inferred; });

  const Candidates c(events, base, out);
  std::vector<CandidateWork> work;  // the cheapest change first
  // 1. An allocator setting: no change to the program.
  if (!expandable_on) {
    work.push_back([&c](Candidate& r) {
      WhatIfOptions o;
      o.alloc_conf = "expandable_segments:True";
      r.remedy = c.predict(o, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                           "--alloc-conf expandable_segments:True", {}, r.replays);
    });
  }
  if (roles.recorded && roles.any(Role::kGradient)) {
    // 2. Gradients set to None between steps, where the run zeroed them in place.
    work.push_back([&c, &roles](Candidate& r) {
      SetToNoneChange change;
      std::optional<ReplayEvents> events;
      try {
        events = c.events().gradients_set_to_none(roles, change);
      } catch (const WhatIfError&) {
        return;  // they are set to None already, or the trace has no optimizer step
      }
      r.remedy = c.judged(
          *events, c.base(), "optimizer.zero_grad(set_to_none=True)", "--set-to-none",
          "the gradients freed at each step's end, made anew in the next backward", r.replays);
    });
  }
  if (roles.recorded) {  // the rest change blocks by role
    // 2. A smaller batch: the largest that fits.
    if (roles.any(Role::kActivation) || roles.any(Role::kTemporary) || roles.any(Role::kInput))
      work.push_back(batch_remedy(c, out));
    // 3. Activations in bf16 (autocast), where they are recorded in float32.
    if (roles.any(Role::kActivation)) {
      work.push_back([&c](Candidate& r) {
        WhatIfOptions o;
        o.dtype.emplace_back(Role::kActivation, 0.5);
        r.remedy = c.predict(o, "activations in bf16 (autocast)", "--dtype activation=bf16",
                             "the activations taken to be float32 in the recording", r.replays);
      });
    }
    // 4. Activation checkpointing of the network's repeated blocks.
    if (roles.any(Role::kActivation)) {
      std::vector<std::string> modules =
          modules_to_checkpoint(roles, events.requested_by_module(roles, Role::kActivation));
      if (!modules.empty()) work.push_back(checkpoint_remedy(c, roles, std::move(modules)));
    }
    // 5. Sharding over more GPUs, the least sharded first.
    if (roles.any(Role::kOptimizerState))
      work.push_back(shard_remedy(c, ShardStage::kZero1, "zero1"));
    if (roles.any(Role::kGradient)) work.push_back(shard_remedy(c, ShardStage::kZero2, "zero2"));
    if (roles.any(Role::kParameter)) work.push_back(shard_remedy(c, ShardStage::kZero3, "zero3"));
  }
  std::vector<Candidate> done(work.size());
  for_each_index(work.size(), worker_count(), [&](std::size_t i) { work[i](done[i]); });
  for (Candidate& d : done) {
    out.replays += d.replays;
    if (!d.remedy) continue;
    if (d.remedy->past_caught_failure) {
      ++out.past_caught_failure;
    } else {
      out.list.push_back(std::move(*d.remedy));
    }
  }
  if (out.list.empty() && out.past_caught_failure > 0) out.none_because = kPastCaughtFailure;
  return out;
}

Remedies find_remedies_file(const std::string& path, std::optional<uint64_t> device_memory) {
  MappedFile file(path);
  return find_remedies(file.bytes(), path, device_memory, file.page_access());
}

}  // namespace gmt::analyzer::allocator
