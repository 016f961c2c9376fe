// SPDX-License-Identifier: Apache-2.0
// `whatif`'s answer: a trace's PyTorch requests replayed unchanged (the fidelity: did the model
// reproduce the recording?) and, when something is changed (the allocator's settings, the
// device's memory), replayed again under the change (the prediction).
//
// The capacity a what-if runs with is what PyTorch's allocator could hold on the device: its
// memory (--device-memory, else the trace's) less what the recording shows was held outside the
// allocator (the CUDA context, other libraries, other processes): where a cudaMalloc of the
// allocator failed, at most the bytes it held plus that request's, less one. A recording
// without such a failure shows nothing outside: the whole device is the capacity.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/model/allocator/replay_events.h"
#include "analyzer/model/allocator/trace_replay.h"

namespace gmt::analyzer::allocator {

// The changes by role (--batch-scale, --shard, --dtype) need each block's role (block_roles.h):
// a request of a role asks for its size times the product of the scales its role is given.
//   - a batch scale K: activations, temporaries and inputs are K times larger; parameters,
//     gradients, optimizer state, buffers are not; other roles (unknown...) stay as they are.
//   - a shard over N ranks (ZeRO's stages; FSDP's full sharding is ZeRO-3): stage 1 divides
//     the optimizer's state by N, stage 2 the gradients too, stage 3 the parameters too. What
//     sharding adds is not modelled: communication buffers, ZeRO-3's gathered parameters of the
//     layer being run, padding of flat buffers.
//   - a dtype: a role's bytes times the new element's size over the recorded one's, which is
//     taken to be float32 (the trace does not say the tensors' dtypes).
enum class ShardStage : uint8_t { kZero1 = 1, kZero2 = 2, kZero3 = 3 };
struct Shard {
  uint32_t ranks = 1;
  ShardStage stage = ShardStage::kZero1;
};
// "N" (ZeRO-1) or "N:zero1|zero2|zero3|fsdp"; an error text, empty when it parsed.
std::string parse_shard(const std::string& text, Shard& out);
// "ROLE=bf16|fp16|fp8|fp32"; an error text, empty when it parsed. The factor is the new
// element's bytes over float32's.
std::string parse_dtype(const std::string& text, Role& role, double& factor);

struct WhatIfOptions {
  std::optional<std::string> alloc_conf;  // PYTORCH_CUDA_ALLOC_CONF as a rerun would set it
  std::optional<uint64_t> device_memory;  // each device's memory; unset: the trace's
  std::optional<double> batch_scale;
  // A second trace of the same program at another batch: each request's size fitted against the
  // batch through both (batch_fit.h) instead of scaled in proportion.
  std::optional<std::string> batch_from;
  std::optional<Shard> shard;
  std::vector<std::pair<Role, double>> dtype;  // role, factor
  std::optional<EmptyCacheAt> empty_cache_at;  // torch.cuda.empty_cache() added there
  // optimizer.zero_grad(set_to_none=True) in a run that zeroed the gradients in place:
  // ReplayEvents::gradients_set_to_none().
  bool set_to_none = false;
  // Activation checkpointing of these modules (qualified names): ReplayEvents::checkpointed().
  std::vector<std::string> checkpoint;
  // Also the largest batch scale that fits (a search of replays, kBatchStep apart).
  bool largest_batch = false;
};
inline constexpr double kBatchStep = 1.0 / 32;
inline constexpr double kLargestBatchSearched = 1024;
// Past twice the recorded batch the largest batch is searched to within 1/64 of itself
// (batch_tolerance()), on the grid of kBatchStep.
inline constexpr uint64_t kBatchRelativePrecision = 64;

// A prediction this close to what the allocator may hold is no verdict either way: the model's
// highest reserved was within 1 % of PyTorch's in reruns on an H100, and what is held outside
// the allocator moves with the program (a library's workspace per stream, its own buffers). A
// transformer predicted to peak 10 MiB under the capacity ran out in its rerun. So a change
// fits only with this share of the capacity to spare, and the largest batch is searched with
// it kept free.
inline constexpr uint64_t kVerdictMarginPercent = 2;
// The bytes a verdict keeps free of `capacity` (UINT64_MAX: none known, none kept).
uint64_t verdict_margin(uint64_t capacity);
// Whether a run that peaks at `max_reserved` is too close to `capacity` to call.
bool too_close(uint64_t max_reserved, uint64_t capacity);
// "fits", "too close to call" or "does not fit".
const char* verdict_text(bool fits, bool close);
// `options` with each device's capacity less its margin.
ReplayOptions with_margin(ReplayOptions options);

// Each role's scale under the changes by role.
std::array<double, kRoleCount> role_scales(const WhatIfOptions& options);
bool changes_roles(const WhatIfOptions& options);

// A change the trace cannot predict (no roles recorded, no block of the roles it changes): one
// line, for the user.
class WhatIfError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct DevicePrediction {
  int device = -1;
  uint64_t total_bytes = 0;        // the memory predicted for; 0: not known
  uint64_t outside_bytes = 0;      // held outside the allocator, as the recording's failures show
  uint64_t capacity = UINT64_MAX;  // what the allocator may hold: total less outside
  uint64_t recorded_max_allocated = 0;
  uint64_t recorded_max_reserved = 0;
  uint64_t predicted_max_allocated = 0;
  uint64_t predicted_max_reserved = 0;
  bool fits = true;  // no request failed in the prediction
  // It fits, but with less than the verdict's margin to spare (too_close()), and replayed with
  // the margin taken off the capacity (with_margin()) a request fails: no verdict.
  bool close = false;
  // Within the margin at the full capacity, it fits with the margin taken off (the allocator
  // releases its cache and retries, as it would if the run needed the margin more): it fits,
  // as the largest batch's search judges. The reserved at most there.
  bool fits_with_margin = false;
  uint64_t margin_max_reserved = 0;
  std::optional<uint64_t> first_failed_size;
  uint64_t recorded_failures_served = 0;  // requests the recording failed, served
  // The program caught that failure and went on (DeviceReplayResult::
  // verdict_past_caught_failure()): no verdict, whatever `fits` says.
  bool past_caught_failure = false;
  uint64_t requests_after_served_failure = 0;
  uint64_t served_failure_size = 0;  // the first request served that failed in the recording
  uint64_t empty_cache_added = 0;    // the prediction's empty_cache() calls added
  DeviceReplayResult fidelity;       // the unchanged replay
  // By role at the highest allocated (DeviceReplayResult's): the recording's and the
  // prediction's.
  std::array<uint64_t, kRoleCount> recorded_roles{};
  std::array<uint64_t, kRoleCount> predicted_roles{};
  std::vector<std::pair<Gap, uint64_t>> gaps;  // the prediction's replay's
};

// The largest batch scale that fits every device (with_margin()): multiples of kBatchStep, to
// within one step up to twice the recorded batch and 1/64 of the scale past it. From a first
// guess (the recorded batch, or an estimate), steps growing twofold up or down to a scale that
// fits and one that does not, then bisection between them (fits is taken to grow no worse as
// the batch shrinks).
struct BatchSearch {
  bool ran = false;
  std::optional<double> largest;  // none: not even kBatchStep fits
  bool capped = false;            // it fits at kLargestBatchSearched, the most searched
  // The smallest scale searched that does not fit (none: capped, or not even kBatchStep fits):
  // the largest that fits is at least `largest` and less than this.
  std::optional<double> smallest_failing;
  uint32_t replays = 0;
  std::string not_run;  // why it did not run, when asked
  // The replay at the largest scale that fits, whole (no request failed).
  std::optional<TraceReplayResult> at_largest;
};

struct WhatIfResult {
  bool changed = false;  // a what-if replay ran (else the prediction is the unchanged replay)
  bool roles_recorded = false;  // the trace carried roles: by_role is more than unknown
  BatchSearch batch;
  AllocConf conf;  // --alloc-conf as parsed over the defaults (keys without effect...)
  std::vector<CheckpointedModule> checkpointed;  // --checkpoint: what it changed, by module
  // --batch-from: the second trace's batch over this one's, and its requests matched.
  struct BatchFrom {
    std::string trace;
    double ratio = 0;
    uint64_t requests = 0;
    uint64_t matched = 0;
  };
  std::optional<BatchFrom> batch_from;
  std::optional<SetToNoneChange> set_to_none;  // --set-to-none: what it changed
  std::vector<DevicePrediction> devices;
  uint64_t block_events = 0;
  uint64_t cuda_graph_captures = 0;
  // The what-if's replay: optimizer steps not run again, each a repeat of the one before.
  uint64_t steps_skipped = 0;
  // Replays with the margin taken off, for a prediction within it (DevicePrediction::close).
  uint64_t margin_replays = 0;
  bool history_dropped = false;
  std::vector<std::string> problems;
};

// What the allocator on the recorded device `d` may hold in a what-if on a device of
// `device_memory` (unset: the recorded one's), and what the recording shows held outside it.
struct Capacity {
  uint64_t total_bytes = 0;
  uint64_t outside_bytes = 0;
  uint64_t capacity = UINT64_MAX;  // none known
};
Capacity whatif_capacity(const DeviceReplayResult& d, std::optional<uint64_t> device_memory);

// The largest batch scale at which every device fits, the other changes (`changed`, its
// capacities set; `options`' other changes by role) as they are, searched from `guess` (a
// batch scale; unset: the recorded batch).
BatchSearch search_largest_batch(const ReplayEvents& events, const ReplayOptions& changed,
                                 const WhatIfOptions& options,
                                 std::optional<double> guess = std::nullopt);

// A first guess at the largest batch scale that fits `capacity`, from the unchanged replay of a
// device: the batch's roles (activations, temporaries, inputs) at its highest allocated grown
// until they fill what the other roles leave, the reserved bytes taken to exceed the allocated
// as they did there. Unset when nothing there scales with the batch.
std::optional<double> guess_batch_scale(const DeviceReplayResult& unchanged, uint64_t capacity);

// Throws TraceError when the trace is not readable at all, WhatIfError when a change cannot be
// predicted from it; the alloc conf must parse (parse_alloc_conf's error empty).
WhatIfResult predict_whatif(std::span<const uint8_t> bytes, const std::string& name,
                            const WhatIfOptions& options, format::PageAccess pages = {});
WhatIfResult predict_whatif_file(const std::string& path, const WhatIfOptions& options);

}  // namespace gmt::analyzer::allocator
