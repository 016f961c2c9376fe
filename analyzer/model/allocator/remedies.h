// SPDX-License-Identifier: Apache-2.0
// What would make a run fit, as the allocator's model predicts it (whatif's replays): for a run
// that failed (an OOM of PyTorch's allocator), or that would not fit a device of another size,
// each change the model can predict, the cheapest first: an allocator setting (no code change),
// a smaller batch (the largest that fits), bf16 activations (autocast), activation
// checkpointing of the network's repeated blocks, the optimizer's state, gradients and
// parameters sharded over the fewest ranks that fit (ZeRO-1, 2, 3). Each with its
// predicted highest reserved and allocated and whether it fits. None when the unchanged replay
// did not reproduce the recording (a prediction would not be worth its figures), nor when the
// run fits as it is.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "format/trace_reader.h"

namespace gmt::analyzer::allocator {

struct Remedy {
  std::string change;  // in words: "expandable_segments:True", "batch x0.75 of the recorded"
  std::string whatif;  // whatif's options that predict it: "--alloc-conf expandable_segments:True"
  // A change that does not fit: the figures up to the request that failed.
  uint64_t predicted_max_reserved_bytes = 0;
  uint64_t predicted_max_allocated_bytes = 0;
  int64_t saves_bytes = 0;  // the recorded highest reserved less the predicted (the device that
                            // needs it)
  bool fits = false;
  bool close = false;  // no request failed, but too close to the capacity to call (too_close())
  std::string note;    // what it does not model, or "the request of 6.13 GiB that failed is served"
  // It gets past a failure the program caught and went on from: what follows is not predicted
  // (DeviceReplayResult::verdict_past_caught_failure()), and the remedy is not offered.
  bool past_caught_failure = false;
};

struct Remedies {
  // The trace has PyTorch's block events: the model applies (else nothing is said of remedies).
  bool applicable = false;
  std::vector<Remedy> list;  // the cheapest first
  // Why there are none, when there are none: the run fits, no PyTorch block events, no fidelity.
  std::string none_because;
  int device = -1;  // the device that needs them (the first that does not fit)
  uint64_t total_bytes = 0;
  uint64_t recorded_max_reserved_bytes = 0;
  uint32_t replays = 0;
  // Changes left out: they get past the failure the program caught, and what it asked for after
  // it answered the failure.
  uint32_t past_caught_failure = 0;
};

// `device_memory`: each device's memory (unset: the recorded). Throws TraceError when the trace
// is not readable at all.
Remedies find_remedies(std::span<const uint8_t> bytes, const std::string& name,
                       std::optional<uint64_t> device_memory, format::PageAccess pages = {});
Remedies find_remedies_file(const std::string& path, std::optional<uint64_t> device_memory);

}  // namespace gmt::analyzer::allocator
