// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/allocator/decode_ahead.h"

#include <algorithm>
#include <deque>
#include <unordered_map>
#include <utility>

#include "analyzer/model/allocator/caching_allocator_model.h"
#include "analyzer/model/allocator/trace_replay.h"
#include "analyzer/model/allocator/whatif_prediction.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/model/roles/role.h"

namespace gmt::analyzer::allocator {

namespace {

// A PyTorch block event of a step: a request, or the completed free of a block.
struct StepEvent {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t stream = 0;
  bool request = false;
};
using Step = std::vector<StepEvent>;

// One event of the template: a request (its stream, size and growth a step), or the free of
// the block that request `index` made in this step (`back` 0) or in the step before (1).
struct TemplateEvent {
  bool request = false;
  uint64_t stream = 0;
  uint64_t size = 0;
  int64_t growth = 0;
  uint32_t back = 0;
  uint64_t index = 0;
  bool operator==(const TemplateEvent& o) const {
    return request == o.request && stream == o.stream && back == o.back && index == o.index;
  }
};

struct DeviceSteps {
  Step current;
  std::deque<Step> closed;  // the last three, oldest first
  uint64_t steps = 0;       // closed, the first (the prompt's forward and all before) included
  std::optional<CachingAllocatorModel> at_last_end;
  bool failed = false;  // an OOM in the recording: its steps are not the loop's
  // The recording's segments, and the latest sample of the driver: the device's memory and
  // what was held outside the allocator then.
  uint64_t reserved = 0;
  uint64_t total = 0;
  std::optional<uint64_t> outside;
};

// What the device held outside the allocator at the latest sample: at the program's end nothing
// moves, where a sample taken while segments are made can be read before its segment is
// recorded.
void sampled(const format::SampleRecord& s, DeviceSteps& d) {
  if (const auto outside = held_outside(s, d.reserved)) {
    d.total = s.driver_total;
    d.outside = outside;
  }
}

// `step`'s events as a template against `before` (the step before it); an error text where a
// free's block was made earlier than that, or not in either.
std::string describe(const Step& before, const Step& step, std::vector<TemplateEvent>& out) {
  // The blocks the step before made and still held at its end, by address: their requests.
  std::unordered_map<uint64_t, uint64_t> held_before;
  {
    std::unordered_map<uint64_t, uint64_t> live;
    uint64_t n = 0;
    for (const StepEvent& e : before) {
      if (e.request) {
        live[e.address] = n++;
      } else {
        live.erase(e.address);
      }
    }
    held_before = std::move(live);
  }
  std::unordered_map<uint64_t, uint64_t> live;
  uint64_t n = 0;
  for (const StepEvent& e : step) {
    TemplateEvent t;
    if (e.request) {
      t.request = true;
      t.stream = e.stream;
      t.size = e.size;
      live[e.address] = n++;
    } else if (const auto it = live.find(e.address); it != live.end()) {
      t.index = it->second;
      live.erase(it);
    } else if (const auto b = held_before.find(e.address); b != held_before.end()) {
      t.back = 1;
      t.index = b->second;
      held_before.erase(b);
    } else {
      return "a step frees a block made before the step before it";
    }
    out.push_back(t);
  }
  return {};
}

// The last step as the template, each request's growth from the step before's; an error text
// where the last two steps are not alike.
std::string make_template(const std::deque<Step>& closed, std::vector<TemplateEvent>& out) {
  std::vector<TemplateEvent> earlier;
  if (std::string why = describe(closed[0], closed[1], earlier); !why.empty()) return why;
  if (std::string why = describe(closed[1], closed[2], out); !why.empty()) return why;
  if (earlier.size() != out.size())
    return "the last two steps are not alike (" + std::to_string(earlier.size()) + " and " +
           std::to_string(out.size()) + " block events)";
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!(earlier[i] == out[i]))
      return "the last two steps are not alike (block event " + std::to_string(i + 1) + ")";
    if (out[i].request)
      out[i].growth = static_cast<int64_t>(out[i].size) - static_cast<int64_t>(earlier[i].size);
  }
  return {};
}

// Runs the template forward from `model` until a request fails or `max_requests` were made.
void run_forward(CachingAllocatorModel model, const std::vector<TemplateEvent>& steps,
                 const Step& last, uint64_t max_requests, DecodeAhead& out) {
  std::vector<uint64_t> before;  // the request ids the step before made, by request
  for (const StepEvent& e : last) {
    if (e.request) before.push_back(e.address);
  }
  std::vector<uint64_t> made;
  uint64_t next_id = uint64_t{1} << 63;  // above any address the recording gave an id
  uint64_t requests = 0;
  for (uint64_t ahead = 1;; ++ahead) {
    made.clear();
    for (const TemplateEvent& t : steps) {
      if (!t.request) {
        model.free(t.back == 0 ? made[t.index] : before[t.index]);
        continue;
      }
      if (++requests > max_requests) return;
      const int64_t size = static_cast<int64_t>(t.size) + t.growth * static_cast<int64_t>(ahead);
      const uint64_t asked = static_cast<uint64_t>(std::max<int64_t>(1, size));
      const uint64_t id = next_id++;
      if (!model.malloc(id, asked, t.stream).ok) {
        out.failed_size = asked;
        return;
      }
      model.clear_events();
      made.push_back(id);
    }
    std::swap(before, made);
    out.steps_that_fit = ahead;
    out.tokens_that_fit = ahead * out.tokens_per_step;
  }
}

// One device's steps run forward into `out`; why not, where they cannot be.
std::string run_device(DeviceSteps& d, const std::deque<KvCacheLength>& lengths,
                       uint64_t max_requests, DecodeAhead& out) {
  if (d.failed) return "the recording ran out of memory";
  // Three decode steps: the first forward's (the prompt's, and all before it) is not one.
  if (d.steps < 4 || lengths.size() < 3) return "fewer than three decode steps";
  const uint64_t tokens = lengths[2].tokens - std::min(lengths[2].tokens, lengths[1].tokens);
  if (tokens == 0 || lengths[1].tokens - std::min(lengths[1].tokens, lengths[0].tokens) != tokens ||
      lengths[1].batch != lengths[2].batch)
    return "the last two steps did not write the same tokens";
  std::vector<TemplateEvent> steps;
  if (std::string why = make_template(d.closed, steps); !why.empty()) return why;
  if (!d.outside || !d.at_last_end) return "the device's free memory was not sampled";
  out.steps = d.steps - 1;
  out.tokens_per_step = tokens;
  out.requests_per_step = static_cast<uint64_t>(
      std::count_if(steps.begin(), steps.end(), [](const TemplateEvent& t) { return t.request; }));
  CachingAllocatorModel model = std::move(*d.at_last_end);
  out.capacity = d.total - std::min(d.total, *d.outside);
  out.reserved = model.stats().reserved_bytes;
  out.kept_free = verdict_margin(out.capacity - std::min(out.capacity, out.reserved));
  model.set_capacity(out.capacity - out.kept_free);
  model.clear_events();
  run_forward(std::move(model), steps, d.closed[2], max_requests, out);
  return {};
}

}  // namespace

DecodeAheadResult decode_ahead(std::span<const uint8_t> bytes, const std::string& name,
                               format::PageAccess pages, uint64_t max_requests) {
  const format::HeaderCheck header = format::check_header(bytes);
  if (!header.ok) throw TraceError(name + ": " + header.error);
  format::TraceReader reader(bytes, header.header, std::move(pages));
  ReplayOptions options;
  options.what_if = true;  // the recorded settings, no capacity: the model's own addresses
  TraceReplay replay(options);
  std::map<int, DeviceSteps> devices;
  std::unordered_map<uint32_t, std::string> names;
  std::deque<KvCacheLength> lengths;  // the last three reports
  const auto pytorch = static_cast<uint32_t>(format::BlockAllocator::kPytorch);
  while (const format::Record* record = reader.next_record()) {
    replay.apply(*record);
    if (const auto* b = std::get_if<format::BlockRecord>(record)) {
      if (b->allocator != pytorch) continue;
      DeviceSteps& d = devices[b->device];
      const auto action = static_cast<format::BlockAction>(b->action);
      if (action == format::BlockAction::kSegmentAlloc ||
          action == format::BlockAction::kSegmentMap) {
        d.reserved += b->size;
      } else if (action == format::BlockAction::kSegmentFree ||
                 action == format::BlockAction::kSegmentUnmap) {
        d.reserved -= std::min(d.reserved, b->size);
      } else if (action == format::BlockAction::kAlloc) {
        d.current.push_back({b->address, b->size, b->stream, true});
      } else if (action == format::BlockAction::kFreeCompleted) {
        d.current.push_back({b->address, b->size, b->stream, false});
      } else if (action == format::BlockAction::kOom) {
        d.failed = true;
      }
    } else if (const auto* sample = std::get_if<format::SampleRecord>(record)) {
      if (const auto d = devices.find(sample->device); d != devices.end())
        sampled(*sample, d->second);
    } else if (const auto* n = std::get_if<format::NameRecord>(record)) {
      names[n->id] = n->text;
    } else if (const auto* s = std::get_if<format::ScopeRecord>(record)) {
      if (s->kind != static_cast<uint32_t>(format::ScopeKind::kKvCacheLength)) continue;
      const auto text = names.find(s->name);
      const auto length = text != names.end() ? parse_kv_cache_length(text->second) : std::nullopt;
      if (!length || length->capacity != 0) continue;  // a preallocated cache: its own count
      lengths.push_back(*length);
      if (lengths.size() > 3) lengths.pop_front();
      for (auto& [device, d] : devices) {
        d.closed.push_back(std::move(d.current));
        d.current.clear();
        if (d.closed.size() > 3) d.closed.pop_front();
        ++d.steps;
        if (const CachingAllocatorModel* model = replay.model(device)) d.at_last_end = *model;
      }
    }
  }

  DecodeAheadResult result;
  for (auto& [device, d] : devices) {
    if (d.steps == 0) continue;  // no cache reported
    DecodeAhead ahead;
    ahead.device = device;
    if (std::string why = run_device(d, lengths, max_requests, ahead); !why.empty()) {
      result.why_not[device] = std::move(why);
    } else {
      result.devices.push_back(ahead);
    }
  }
  return result;
}

}  // namespace gmt::analyzer::allocator
