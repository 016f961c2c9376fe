// SPDX-License-Identifier: Apache-2.0
// Inference in its own terms: at a moment (the end, a failure, the peak), the key-value cache's
// bytes, what one more token takes per sequence, and how many more tokens (or sequences) the
// device's free memory and the allocator's cache would hold, where the framework's hooks reported
// a cache (format's ScopeKind::kKvCacheLength).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "analyzer/model/roles/role.h"
#include "analyzer/model/trace_summary.h"

namespace gmt::analyzer {

struct InferenceFigures {
  uint64_t kv_cache_bytes = 0;  // the kv_cache role's bytes then
  KvCacheLength length;
  // What more the cache could take: the device's free memory (cuMemGetInfo then), when sampled,
  // plus the allocator's cache (its segments' free pieces).
  std::optional<uint64_t> device_free_bytes;
  uint64_t allocator_cache_bytes = 0;
  // A growing cache: more tokens for every sequence of the batch, and more sequences at the
  // current length. Each token a growing cache takes makes its layer's keys (or values) anew,
  // one token longer, while the old ones live: the last layer's copy is counted. None where the
  // free memory is not known. A preallocated cache: the tokens per sequence it has left, where
  // the hooks counted what its forwards wrote (else none).
  std::optional<uint64_t> tokens_that_fit;
  std::optional<uint64_t> sequences_that_fit;
  // The last step's working memory (RoleBreakdown::step_bytes), which tokens_that_fit counts.
  std::optional<uint64_t> step_bytes;
  // A preallocated cache: the tokens per sequence it can hold in all.
  std::optional<uint64_t> capacity_tokens;
  // At exit, a growing cache: tokens_that_fit is the allocator's model's, its decode loop run
  // forward (allocator/decode_ahead.h), not the estimate from the free bytes; else why not.
  std::optional<allocator::DecodeAhead> modelled;
  // The model ran from a later moment of the same loop (its end), at this many tokens per
  // sequence: tokens_that_fit adds what the loop made up to there.
  std::optional<uint64_t> modelled_from_tokens;
  std::string not_modelled;
  // The estimate from the free bytes (a growing cache), beside the model's figure: what it
  // says where the model stopped at its bound.
  std::optional<uint64_t> estimated_tokens_that_fit;
  // The same decode loop ran out of memory (FailedAllocation::decode_ran_out()) at this length or
  // later: the tokens per sequence then and the request that failed. tokens_that_fit is what
  // the run itself then generated past this moment (none at the failure), whatever the free
  // bytes say (too few, or in pieces too small, for the step).
  std::optional<uint64_t> ran_out_tokens;
  std::optional<uint64_t> ran_out_bytes;
};

// None where the hooks reported no cache before the moment. `ahead`: the decode loop run
// forward from its end, where it was, the cache then `ahead_from` (used for a moment of the same
// loop). `ran_out`: the decode steps that ran out (used for a moment of their loop).
std::optional<InferenceFigures> inference_figures(
    const RoleBreakdown& roles, std::optional<uint64_t> device_free_bytes,
    const allocator::DecodeAhead* ahead = nullptr, const KvCacheLength* ahead_from = nullptr,
    const std::vector<DeviceSummary::DecodeRanOut>& ran_out = {});

// A device's: at exit (the program's end, with the device's free memory sampled at the end),
// else at the peak.
std::optional<InferenceFigures> device_inference(const DeviceSummary& device);
// At the peak, with the device's free memory sampled then.
std::optional<InferenceFigures> peak_inference(const DeviceSummary& device);
// At a failure, with the device's free memory sampled right after it.
std::optional<InferenceFigures> failure_inference(const FailedAllocation& failure);

// {"kv_cache_bytes", "batch", "tokens", "capacity", "bytes_per_token", "device_free_bytes",
// "allocator_cache_bytes", "step_bytes", "tokens_that_fit", "sequences_that_fit",
// "tokens_that_fit_by" ("allocator_model", "estimate", "failure"), "ran_out_tokens",
// "ran_out_request_bytes", "modelled": {"steps",
// "tokens_per_step", "requests_per_step", "capacity_bytes", "reserved_bytes", "kept_free_bytes",
// "failed_request_bytes"}, "estimated_tokens_that_fit", "not_modelled"} (null where not known).
nlohmann::ordered_json inference_json(const InferenceFigures& figures);
// A few lines under `indent`, titled "inference" + `when`.
void write_inference_text(const InferenceFigures& figures, const std::string& when,
                          const std::string& indent, std::ostream& out);

}  // namespace gmt::analyzer
