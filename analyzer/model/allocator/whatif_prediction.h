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

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/model/allocator/trace_replay.h"

namespace gmt::analyzer::allocator {

struct WhatIfOptions {
  std::optional<std::string> alloc_conf;  // PYTORCH_CUDA_ALLOC_CONF as a rerun would set it
  std::optional<uint64_t> device_memory;  // each device's memory; unset: the trace's
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
  std::optional<uint64_t> first_failed_size;
  uint64_t recorded_failures_served = 0;       // requests the recording failed, served
  DeviceReplayResult fidelity;                 // the unchanged replay
  std::vector<std::pair<Gap, uint64_t>> gaps;  // the prediction's replay's
};

struct WhatIfResult {
  bool changed = false;  // a what-if replay ran (else the prediction is the unchanged replay)
  AllocConf conf;        // --alloc-conf as parsed over the defaults (keys without effect...)
  std::vector<DevicePrediction> devices;
  uint64_t block_events = 0;
  uint64_t cuda_graph_captures = 0;
  bool history_dropped = false;
  std::vector<std::string> problems;
};

// Throws TraceError when the trace is not readable at all; the alloc conf must parse
// (parse_alloc_conf's error empty).
WhatIfResult predict_whatif(std::span<const uint8_t> bytes, const std::string& name,
                            const WhatIfOptions& options, format::PageAccess pages = {});
WhatIfResult predict_whatif_file(const std::string& path, const WhatIfOptions& options);

}  // namespace gmt::analyzer::allocator
