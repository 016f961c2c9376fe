// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/allocator/remedies.h"

#include <algorithm>
#include <sstream>

#include "analyzer/model/allocator/block_roles.h"
#include "analyzer/model/allocator/trace_replay.h"
#include "analyzer/model/allocator/whatif_prediction.h"
#include "analyzer/model/input/mapped_file.h"

namespace gmt::analyzer::allocator {
namespace {

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// The replays of one trace, their capacities fixed, each candidate one more replay.
class Candidates {
 public:
  Candidates(std::span<const uint8_t> bytes, const std::string& name, format::PageAccess pages,
             const BlockRoles& roles, const ReplayOptions& base, Remedies& out)
      : bytes_(bytes),
        name_(name),
        pages_(std::move(pages)),
        roles_(roles),
        base_(base),
        out_(out) {}

  // The change predicted.
  Remedy predict(const WhatIfOptions& change, std::string text, std::string whatif,
                 std::string note = {}) {
    ReplayOptions r = base_;
    r.alloc_conf = change.alloc_conf;
    r.scale = role_scales(change);
    // A change that does not fit is not offered for its figures: its replay stops at the failure.
    r.stop_at_failure = true;
    ++out_.replays;
    const TraceReplayResult result = replay_trace(bytes_, name_, r, pages_);
    Remedy remedy;
    remedy.change = std::move(text);
    remedy.whatif = std::move(whatif);
    remedy.note = std::move(note);
    remedy.fits = std::all_of(result.devices.begin(), result.devices.end(),
                              [](const DeviceReplayResult& d) { return d.failed_requests == 0; });
    uint64_t served = 0;
    for (const DeviceReplayResult& d : result.devices) {
      if (d.device != out_.device) continue;
      remedy.predicted_max_reserved_bytes = d.stats.max_reserved_bytes;
      remedy.predicted_max_allocated_bytes = d.stats.max_allocated_bytes;
      remedy.saves_bytes = static_cast<int64_t>(out_.recorded_max_reserved_bytes) -
                           static_cast<int64_t>(d.stats.max_reserved_bytes);
      served = d.recorded_failures_served;
    }
    if (remedy.fits && served > 0 && remedy.note.empty())
      remedy.note =
          "the request that failed is served (what the program did after its failure "
          "is not in the trace)";
    return remedy;
  }
  void offer(Remedy remedy) { out_.list.push_back(std::move(remedy)); }

  const BlockRoles& roles() const { return roles_; }
  std::span<const uint8_t> bytes() const { return bytes_; }
  const std::string& name() const { return name_; }
  const format::PageAccess& pages() const { return pages_; }
  const ReplayOptions& base() const { return base_; }

 private:
  std::span<const uint8_t> bytes_;
  const std::string& name_;
  format::PageAccess pages_;
  const BlockRoles& roles_;
  const ReplayOptions& base_;
  Remedies& out_;
};

// The fewest ranks (of 2, 4, 8) over which sharding at `stage` fits; 8 when none does, to show
// how far it gets.
void shard_remedy(Candidates& c, ShardStage stage, const char* stage_name) {
  for (const uint32_t ranks : {2u, 4u, 8u}) {
    WhatIfOptions o;
    o.shard = Shard{ranks, stage};
    Remedy r = c.predict(o, "shard over " + std::to_string(ranks) + " ranks (" + stage_name + ")",
                         "--shard " + std::to_string(ranks) + ":" + stage_name,
                         "by formula: communication buffers not modelled");
    if (r.fits || ranks == 8) return c.offer(std::move(r));
  }
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
  // Does the run fit as it is (on this device)?
  const TraceReplayResult as_is = replay_trace(bytes, name, base, pages);
  ++out.replays;
  for (const DeviceReplayResult& d : as_is.devices) {
    if (d.failed_requests > 0) {
      out.device = d.device;
      break;
    }
  }
  if (out.device < 0) {
    out.none_because = "the run fits: nothing to remedy";
    return out;
  }
  for (const DeviceReplayResult& d : unchanged.devices) {
    if (d.device != out.device) continue;
    out.total_bytes = whatif_capacity(d, device_memory).total_bytes;
    out.recorded_max_reserved_bytes = d.recorded_max_reserved;
  }
  const BlockRoles roles = read_block_roles(bytes, name, pages);
  base.roles = &roles;
  const bool expandable_on =
      std::any_of(unchanged.devices.begin(), unchanged.devices.end(),
                  [](const DeviceReplayResult& d) { return d.expandable_inferred; });

  Candidates c(bytes, name, pages, roles, base, out);
  // 1. An allocator setting: no change to the program.
  if (!expandable_on) {
    WhatIfOptions o;
    o.alloc_conf = "expandable_segments:True";
    c.offer(c.predict(o, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                      "--alloc-conf expandable_segments:True"));
  }
  if (!roles.recorded) return out;  // the rest change blocks by role
  // 2. A smaller batch: the largest that fits.
  if (roles.any(Role::kActivation) || roles.any(Role::kTemporary) || roles.any(Role::kInput)) {
    WhatIfOptions o;
    const BatchSearch search = search_largest_batch(bytes, name, pages, base, o);
    out.replays += search.replays;
    if (search.largest && *search.largest < 1) {
      o.batch_scale = *search.largest;
      c.offer(c.predict(o, "batch <= x" + number(*search.largest) + " of the recorded",
                        "--batch-scale " + number(*search.largest),
                        "the largest that fits, in steps of x" + number(kBatchStep)));
    }
  }
  // 3. Activations in bf16 (autocast), where they are recorded in float32.
  if (roles.any(Role::kActivation)) {
    WhatIfOptions o;
    o.dtype.emplace_back(Role::kActivation, 0.5);
    c.offer(c.predict(o, "activations in bf16 (autocast)", "--dtype activation=bf16",
                      "the activations taken to be float32 in the recording"));
  }
  // 4. Sharding over more GPUs, the least sharded first.
  if (roles.any(Role::kOptimizerState)) shard_remedy(c, ShardStage::kZero1, "zero1");
  if (roles.any(Role::kGradient)) shard_remedy(c, ShardStage::kZero2, "zero2");
  if (roles.any(Role::kParameter)) shard_remedy(c, ShardStage::kZero3, "zero3");
  return out;
}

Remedies find_remedies_file(const std::string& path, std::optional<uint64_t> device_memory) {
  MappedFile file(path);
  return find_remedies(file.bytes(), path, device_memory, file.page_access());
}

}  // namespace gmt::analyzer::allocator
