// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/inference_report.h"

#include <algorithm>

#include "analyzer/report/byte_size.h"

namespace gmt::analyzer {

namespace {

// More tokens per sequence that `available` bytes hold for a cache that grows by
// concatenation: n tokens take n x batch x per_token, and the step that writes the last of them
// needs its working memory at that length. The last step's (`step`, at T tokens) is taken to grow
// with the length: attention's scratch and the layer's keys made anew are as long as the cache
// (a grouped-query attention that repeats the keys for every head needs several layers' worth),
// so n fit while n x per_step + step x (T + n) / T <= available. Without a step seen, one layer's
// keys made anew while the old ones live is what the last token needs.
uint64_t more_tokens(const KvCacheLength& l, uint64_t available, std::optional<uint64_t> step) {
  const double per_step = static_cast<double>(l.batch) * static_cast<double>(l.bytes_per_token);
  if (step && *step > 0 && l.tokens > 0 && per_step > 0) {
    const double work = static_cast<double>(*step);
    if (static_cast<double>(available) <= work) return 0;
    return static_cast<uint64_t>((static_cast<double>(available) - work) /
                                 (per_step + work / static_cast<double>(l.tokens)));
  }
  // Keys and values of every layer: the largest single tensor is at most a layer's keys, a
  // 2 x layers-th of the cache; with the layers not told, the whole cache's worth is kept back.
  const double copy = l.layers > 0 ? 1.0 / (2.0 * static_cast<double>(l.layers)) : 1.0;
  const double held = static_cast<double>(l.tokens) * per_step * copy;
  if (per_step <= 0 || static_cast<double>(available) <= held) return 0;
  return static_cast<uint64_t>((static_cast<double>(available) - held) / (per_step * (1 + copy)));
}

// Whether `later` is the same decode loop as `now`, as long or longer: one growth of the cache
// (KvCacheLength::growing_since_ns).
bool same_loop_later(const KvCacheLength& now, const KvCacheLength& later) {
  return now.capacity == 0 && later.capacity == 0 && now.batch == later.batch &&
         now.growing_since_ns == later.growing_since_ns && now.tokens <= later.tokens;
}

}  // namespace

std::optional<InferenceFigures> inference_figures(
    const RoleBreakdown& roles, std::optional<uint64_t> device_free_bytes,
    const allocator::DecodeAhead* ahead, const KvCacheLength* ahead_from,
    const std::vector<DeviceSummary::DecodeRanOut>& ran_out) {
  if (!roles.kv_cache) return std::nullopt;
  InferenceFigures f;
  f.kv_cache_bytes = roles[Role::kKvCache].bytes;
  f.length = *roles.kv_cache;
  f.device_free_bytes = device_free_bytes;
  f.allocator_cache_bytes = roles[Role::kAllocatorCache].bytes;
  if (f.length.capacity > 0) {
    // Preallocated: what more it holds is what it has left, where the hooks counted its tokens.
    f.capacity_tokens = f.length.capacity;
    if (f.length.tokens > 0)
      f.tokens_that_fit = f.length.capacity - std::min(f.length.capacity, f.length.tokens);
    return f;
  }
  const auto loop_ran_out = std::find_if(
      ran_out.begin(), ran_out.end(),
      [&](const DeviceSummary::DecodeRanOut& r) { return same_loop_later(f.length, r.cache); });
  if (loop_ran_out != ran_out.end()) {
    f.ran_out_tokens = loop_ran_out->cache.tokens;
    f.ran_out_bytes = loop_ran_out->request_bytes;
    f.tokens_that_fit = loop_ran_out->cache.tokens - f.length.tokens;
    if (*f.tokens_that_fit == 0) f.sequences_that_fit = 0;
    f.step_bytes = roles.step_bytes;
    return f;
  }
  if (!device_free_bytes) return f;
  const uint64_t available = *device_free_bytes + f.allocator_cache_bytes;
  f.step_bytes = roles.step_bytes;
  f.tokens_that_fit = more_tokens(f.length, available, roles.step_bytes);
  f.estimated_tokens_that_fit = f.tokens_that_fit;
  if (ahead != nullptr && ahead_from != nullptr && same_loop_later(f.length, *ahead_from)) {
    f.modelled = *ahead;
    const uint64_t made = ahead_from->tokens - f.length.tokens;
    f.tokens_that_fit = made + ahead->tokens_that_fit;
    if (made > 0) f.modelled_from_tokens = ahead_from->tokens;
  }
  const uint64_t per_sequence = f.length.tokens * f.length.bytes_per_token;
  if (per_sequence > 0) f.sequences_that_fit = available / per_sequence;
  return f;
}

namespace {

std::optional<uint64_t> free_of(const std::optional<ViewValues>& views) {
  if (!views || !views->driver_used_bytes || !views->driver_total_bytes) return std::nullopt;
  return *views->driver_total_bytes -
         std::min(*views->driver_total_bytes, *views->driver_used_bytes);
}

}  // namespace

namespace {

// The cache at the end, where the allocator's model ran the decode loop on from it.
const KvCacheLength* modelled_from(const DeviceSummary& device) {
  if (!device.decode_ahead || !device.roles_at_exit || !device.roles_at_exit->kv_cache)
    return nullptr;
  return &*device.roles_at_exit->kv_cache;
}

}  // namespace

std::optional<InferenceFigures> device_inference(const DeviceSummary& device) {
  if (device.roles_at_exit && device.roles_at_exit->kv_cache) {
    auto f = inference_figures(*device.roles_at_exit, free_of(device.views_at_exit),
                               device.decode_ahead ? &*device.decode_ahead : nullptr,
                               modelled_from(device), device.decode_ran_out);
    if (f && !f->capacity_tokens && !f->modelled && !f->ran_out_bytes)
      f->not_modelled = device.decode_ahead_why_not;
    return f;
  }
  return peak_inference(device);
}

std::optional<InferenceFigures> peak_inference(const DeviceSummary& device) {
  if (!device.roles_at_peak || !device.roles_at_peak->kv_cache) return std::nullopt;
  return inference_figures(*device.roles_at_peak, free_of(device.views_at_peak),
                           device.decode_ahead ? &*device.decode_ahead : nullptr,
                           modelled_from(device), device.decode_ran_out);
}

std::optional<InferenceFigures> failure_inference(const FailedAllocation& failure) {
  if (!failure.roles || !failure.roles->kv_cache) return std::nullopt;
  std::vector<DeviceSummary::DecodeRanOut> ran_out;
  if (auto own = failure.decode_ran_out()) ran_out.push_back(*own);
  return inference_figures(*failure.roles, failure.driver_free_bytes(), nullptr, nullptr, ran_out);
}

namespace {

nlohmann::ordered_json modelled_json(const allocator::DecodeAhead& a) {
  return {{"steps", a.steps},
          {"tokens_per_step", a.tokens_per_step},
          {"requests_per_step", a.requests_per_step},
          {"capacity_bytes", a.capacity},
          {"reserved_bytes", a.reserved},
          {"kept_free_bytes", a.kept_free},
          {"failed_request_bytes", a.failed_size ? nlohmann::ordered_json(*a.failed_size)
                                                 : nlohmann::ordered_json(nullptr)}};
}

}  // namespace

nlohmann::ordered_json inference_json(const InferenceFigures& f) {
  const auto optional = [](const std::optional<uint64_t>& v) {
    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
  };
  return {{"kv_cache_bytes", f.kv_cache_bytes},
          {"batch", f.length.batch},
          {"tokens", f.length.capacity > 0 && f.length.tokens == 0
                         ? nlohmann::ordered_json(nullptr)
                         : nlohmann::ordered_json(f.length.tokens)},
          {"capacity", optional(f.capacity_tokens)},
          {"layers", f.length.layers},
          {"bytes_per_token", f.length.bytes_per_token},
          {"device_free_bytes", optional(f.device_free_bytes)},
          {"allocator_cache_bytes", f.allocator_cache_bytes},
          {"step_bytes", optional(f.step_bytes)},
          {"tokens_that_fit", optional(f.tokens_that_fit)},
          {"sequences_that_fit", optional(f.sequences_that_fit)},
          {"tokens_that_fit_by", !f.tokens_that_fit || f.capacity_tokens
                                     ? nlohmann::ordered_json(nullptr)
                                 : f.ran_out_bytes ? nlohmann::ordered_json("failure")
                                 : f.modelled      ? nlohmann::ordered_json("allocator_model")
                                                   : nlohmann::ordered_json("estimate")},
          {"ran_out_tokens", optional(f.ran_out_tokens)},
          {"ran_out_request_bytes", optional(f.ran_out_bytes)},
          {"modelled", f.modelled ? modelled_json(*f.modelled) : nlohmann::ordered_json(nullptr)},
          {"estimated_tokens_that_fit", optional(f.estimated_tokens_that_fit)},
          {"not_modelled", f.not_modelled.empty() ? nlohmann::ordered_json(nullptr)
                                                  : nlohmann::ordered_json(f.not_modelled)}};
}

namespace {

void write_modelled(const InferenceFigures& f, const std::string& indent, std::ostream& out) {
  const allocator::DecodeAhead& a = *f.modelled;
  out << indent << "  " << (a.failed_size ? "" : "at least ") << *f.tokens_that_fit
      << " more tokens per sequence fit";
  if (f.sequences_that_fit)
    out << " (or about " << *f.sequences_that_fit << " more sequences of this length)";
  out << ": ";
  if (f.modelled_from_tokens)
    out << "the decode loop went on to " << *f.modelled_from_tokens
        << " tokens per sequence, then ";
  out << "the last decode step run forward through the allocator's model, each request "
         "grown as it grew the step before, ";
  if (a.failed_size) {
    out << "until a request of " << human_bytes(*a.failed_size) << " failed";
  } else {
    out << "stopped after " << a.steps_that_fit << " steps, none failed";
  }
  out << ", with " << human_bytes(a.kept_free) << " kept free of the "
      << human_bytes(a.capacity - std::min(a.capacity, a.reserved))
      << " the allocator could take beside its " << human_bytes(a.reserved) << "\n";
  if (!a.failed_size && f.estimated_tokens_that_fit)
    out << indent << "  (the free bytes less a step's working memory would hold about "
        << *f.estimated_tokens_that_fit << ")\n";
}

}  // namespace

void write_inference_text(const InferenceFigures& f, const std::string& when,
                          const std::string& indent, std::ostream& out) {
  const KvCacheLength& l = f.length;
  out << indent << "inference" << when << ": key-value cache " << human_bytes(f.kv_cache_bytes)
      << ", " << l.batch << (l.batch == 1 ? " sequence" : " sequences");
  if (l.tokens > 0) out << " of " << l.tokens << " tokens";
  out << ", " << human_bytes(l.bytes_per_token) << " per token per sequence\n";
  if (f.capacity_tokens) {
    out << indent << "  preallocated for " << *f.capacity_tokens << " tokens per sequence";
    if (f.tokens_that_fit) {
      out << ", " << l.tokens << " of them written ("
          << l.tokens * 100 / std::max<uint64_t>(1, *f.capacity_tokens)
          << " % full): " << *f.tokens_that_fit << " more tokens per sequence fit in it\n";
    } else {
      out << " (how full it is, the hooks could not count: torch.compile was asked for, whose "
             "forwards run past them, or the forwards gave no token count)\n";
    }
    return;
  }
  if (f.ran_out_tokens && *f.tokens_that_fit == 0) {
    out << indent << "  no more tokens or sequences fit: the decode step at " << l.tokens
        << " tokens per sequence ran out of memory (a request of " << human_bytes(*f.ran_out_bytes)
        << " failed)\n";
    return;
  }
  if (f.ran_out_tokens) {
    out << indent << "  " << *f.tokens_that_fit
        << " more tokens per sequence fit: the decode loop went on to " << *f.ran_out_tokens
        << " tokens per sequence and ran out of memory there (a request of "
        << human_bytes(*f.ran_out_bytes) << " failed)\n";
    return;
  }
  if (!f.tokens_that_fit) {
    out << indent << "  tokens that fit: not known (the device's free memory was not sampled)\n";
    return;
  }
  if (f.modelled) {
    write_modelled(f, indent, out);
    return;
  }
  out << indent << "  " << *f.tokens_that_fit << " more tokens per sequence fit";
  if (f.sequences_that_fit)
    out << ", or " << *f.sequences_that_fit << " more sequences of this length";
  out << " (" << human_bytes(*f.device_free_bytes) << " free on the device, "
      << human_bytes(f.allocator_cache_bytes) << " in the allocator's cache";
  if (f.step_bytes)
    out << "; a step needs " << human_bytes(*f.step_bytes)
        << " more at this length, growing with it";
  out << ")\n";
  if (!f.not_modelled.empty())
    out << indent
        << "  (an estimate: the decode loop was not run forward through the "
           "allocator's model: "
        << f.not_modelled << ")\n";
}

}  // namespace gmt::analyzer
