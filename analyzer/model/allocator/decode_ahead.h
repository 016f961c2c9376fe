// SPDX-License-Identifier: Apache-2.0
// How many more tokens a decode loop would generate before PyTorch's allocator runs out,
// found by replaying the loop's last step forward through the allocator's model rather than
// by dividing the free memory by the cache's growth: a cache that grows by concatenation makes
// each layer's keys and values anew, one token longer, every step, so the blocks it frees are
// one token too short for the next step's and the allocator's cache is not all usable; and
// the step's scratch grows with the length too. Only the model's best fit, splitting and
// release-and-retry tell how far that goes.
//
// The steps are told apart by the hooks' key-value cache reports (format's
// ScopeKind::kKvCacheLength, one at the end of each root forward): a step is the device's
// PyTorch block events between two of them, what generate() does between forwards included.
// The last step is the template: each of its requests asks in every later step for its size
// plus its growth since the step before (the same request of that step), times the steps
// ahead; each of its frees frees the block that the same request made in the same step or in
// the step before. The last two steps must be alike for that (the same requests in the same
// order on the same streams, each free of the same request's block, the same tokens a step);
// where they are not, or a step frees a block older than the step before, nothing is modelled
// and `why_not` says so.
//
// The model starts from the state the trace's replay left at the last step's end, with the
// capacity the allocator could hold (the device's memory less what the driver's last sample
// shows was held outside it), of which the verdict's share (whatif_prediction.h) of what it had
// left then is kept free, and runs the template forward until a request fails. The share is of
// what was left, not of the whole: the figure's error grows with the steps run forward, not
// with the device (2 % of an H100 is 1.6 GiB, a hundred steps of a batch of 64 where 3 GiB
// were left).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "format/trace_reader.h"

namespace gmt::analyzer::allocator {

struct DecodeAhead {
  int device = -1;
  uint64_t steps = 0;            // decode steps the trace holds (cache reports after the first)
  uint64_t tokens_per_step = 0;  // per sequence
  uint64_t requests_per_step = 0;
  uint64_t capacity = 0;   // what the allocator could hold on the device
  uint64_t reserved = 0;   // what it held at the last step's end
  uint64_t kept_free = 0;  // the verdict's share of what it had left
  // Steps the model ran forward before a request failed, and the tokens per sequence they
  // would write.
  uint64_t steps_that_fit = 0;
  uint64_t tokens_that_fit = 0;
  // The request that failed, its size; none where the model stopped at its bound (then at
  // least tokens_that_fit fit).
  std::optional<uint64_t> failed_size;
};

struct DecodeAheadResult {
  std::vector<DecodeAhead> devices;  // the devices modelled
  // Devices whose steps could not be modelled, and why (one line each).
  std::map<int, std::string> why_not;
};

// The most requests run forward per device before the model stops and says "at least": about
// half a second. A decode loop of a large device and a small cache a token (a batch of one)
// would otherwise take minutes.
inline constexpr uint64_t kDecodeAheadRequests = 5'000'000;

// Reads the whole trace (`bytes`; `name` in errors); each device's model stops after
// `max_requests` requests run forward. Throws TraceError when the trace is not readable at all.
DecodeAheadResult decode_ahead(std::span<const uint8_t> bytes, const std::string& name,
                               format::PageAccess pages = {},
                               uint64_t max_requests = kDecodeAheadRequests);

}  // namespace gmt::analyzer::allocator
