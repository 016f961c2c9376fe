// SPDX-License-Identifier: Apache-2.0
#include "analyzer/html/allocation_pass.h"

#include <algorithm>
#include <array>
#include <optional>
#include <set>
#include <unordered_map>

#include "analyzer/model/containers/flat_hash_map.h"
#include "analyzer/model/input/mapped_file.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/model/owner_library.h"
#include "analyzer/model/replay.h"
#include "analyzer/model/roles/outside_roles.h"
#include "format/file_header.h"
#include "format/memory_kind.h"
#include "format/trace_reader.h"

namespace gmt::analyzer {
namespace {

using format::BlockAction;

// Size classes of an eighth of an octave: the threshold keeps at most the limit's count of the
// largest allocations, give or take one class.
constexpr std::size_t kSizeClasses = 64 * 8;
std::size_t size_class(uint64_t size) {
  if (size == 0) return 0;
  const int octave = 63 - __builtin_clzll(size);
  const uint64_t eighth = octave >= 3 ? (size >> (octave - 3)) & 7 : 0;
  return static_cast<std::size_t>(octave) * 8 + eighth;
}
uint64_t class_floor(std::size_t c) {
  const std::size_t octave = c / 8;
  const uint64_t eighth = c % 8;
  if (octave < 3) return uint64_t{1} << octave;
  return (uint64_t{8} + eighth) << (octave - 3);
}

bool drawn_alloc(const format::AllocRecord& a) {
  return format::counts_toward_device_usage(a.kind);
}

template <class Fn>
void read_records(const TraceSummary& trace, Fn&& fn) {
  MappedFile file(trace.path);
  const format::HeaderCheck header = format::check_header(file.bytes());
  if (!header.ok) throw TraceError(trace.path + ": " + header.error);
  format::TraceReader reader(file.bytes(), header.header, file.page_access());
  while (const format::Record* record = reader.next_record()) fn(*record);
}

uint64_t site_key(int allocator, uint32_t stack) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(allocator)) << 32) | stack;
}

// What the first pass decides: the smallest size kept whole (the largest allocations, at most
// `bands` of them), and the sites whose smaller allocations get a series of their own (those
// that allocated the most bytes under that size, by octave); the others share the last series.
struct Plan {
  uint64_t threshold = 0;  // kept whole: all from `whole` up, `quota` of those from threshold
  uint64_t whole = 0;
  std::size_t quota = 0;
  std::unordered_map<uint64_t, uint32_t> series_of;  // by site_key
  // The shared series' index: `series` for caching allocators' blocks, `series` + 1 for driver
  // allocations (the page tells the allocators' cache from what they hand out).
  uint32_t series = 0;
  std::vector<bool> blocks;  // per series, whether it holds blocks
};

Plan plan(const TraceSummary& trace, const AllocationLimits& limits) {
  std::array<uint64_t, kSizeClasses> counts{};
  std::unordered_map<uint64_t, uint32_t> index;                        // by site_key
  std::vector<std::pair<uint64_t, std::array<uint64_t, 64>>> octaves;  // (key, bytes per octave)
  const auto add = [&](int allocator, uint32_t stack, uint64_t size) {
    ++counts[size_class(size)];
    const auto [it, added] =
        index.try_emplace(site_key(allocator, stack), static_cast<uint32_t>(octaves.size()));
    if (added) octaves.push_back({it->first, {}});
    octaves[it->second].second[size == 0 ? 0 : 63 - __builtin_clzll(size)] += size;
  };
  read_records(trace, [&](const format::Record& record) {
    if (const auto* a = std::get_if<format::AllocRecord>(&record)) {
      if (drawn_alloc(*a)) add(-1, a->stack, a->size);
    } else if (const auto* b = std::get_if<format::BlockRecord>(&record)) {
      if (static_cast<BlockAction>(b->action) == BlockAction::kAlloc)
        add(static_cast<int>(b->allocator), b->stack, b->size);
    }
  });
  Plan out;
  uint64_t kept = 0;
  // The class where the limit falls is kept in part (its first allocations), so that a trace
  // of many same-sized allocations still has its largest drawn one by one.
  for (std::size_t c = kSizeClasses; c-- > 0;) {
    if (kept + counts[c] > limits.bands) {
      out.threshold = class_floor(c);
      out.whole = class_floor(c + 1);
      out.quota = limits.bands - kept;
      break;
    }
    kept += counts[c];
  }
  if (out.threshold == 0) return out;
  const int top_octave = 63 - __builtin_clzll(out.threshold);
  std::vector<std::pair<uint64_t, uint64_t>> ranked;  // (small bytes, key)
  for (const auto& [key, bytes] : octaves) {
    uint64_t small = 0;
    for (int o = 0; o < top_octave; ++o) small += bytes[static_cast<std::size_t>(o)];
    if (small > 0) ranked.emplace_back(small, key);
  }
  std::sort(ranked.begin(), ranked.end(), std::greater<>());
  const std::size_t own = limits.series > 2 ? limits.series - 2 : 0;
  for (std::size_t i = 0; i < ranked.size() && i < own; ++i) {
    out.series_of.emplace(ranked[i].second, static_cast<uint32_t>(i));
    out.blocks.push_back((ranked[i].second >> 32) != 0xFFFFFFFFu);
  }
  out.series = static_cast<uint32_t>(std::min(ranked.size(), own));
  out.blocks.push_back(true);
  out.blocks.push_back(false);
  return out;
}

class AllocationTracker {
 public:
  AllocationTracker(const TraceSummary& trace, uint64_t resolution_ns, uint64_t buckets,
                    const AllocationLimits& limits, Plan plan)
      : trace_(trace), owners_(trace), limits_(limits), plan_(std::move(plan)) {
    out_.resolution_ns = resolution_ns;
    out_.buckets = buckets;
    out_.threshold_bytes = plan_.threshold;
    out_.sites.push_back({});  // kOtherSite
    for (std::size_t k = 0; k < limits.moments; ++k) {
      moments_.push_back(trace.duration_ns / limits.moments * k +
                         trace.duration_ns / limits.moments / 2);
    }
  }

  void apply(const format::Record& record) {
    const auto* block = std::get_if<format::BlockRecord>(&record);
    const auto* alloc = std::get_if<format::AllocRecord>(&record);
    // A driver allocation is drawn once the record after it shows it is no caching allocator's
    // segment (whose blocks are drawn instead).
    // (Definitions, samples and scopes between the two say nothing either way.)
    const bool event = block != nullptr || alloc != nullptr ||
                       std::holds_alternative<format::FreeRecord>(record) ||
                       std::holds_alternative<format::AllocFailedRecord>(record);
    if (pending_ && event) {
      const auto action =
          block != nullptr ? static_cast<BlockAction>(block->action) : BlockAction::kAlloc;
      const bool segment =
          block != nullptr &&
          ((action == BlockAction::kSegmentAlloc && block->address == pending_->address) ||
           (action == BlockAction::kSegmentMap && block->thread == pending_->thread));
      if (!segment) begin_driver(*pending_);
      // The segment's request: its segment and the block handed out of it are one moment with
      // the driver allocation, as the model counts them (the timeline's same_request()).
      if (segment) request_ = std::make_pair(pending_->thread, pending_->time_ns);
      pending_.reset();
    }
    uint64_t time = format::record_time(record);
    if (request_ && block != nullptr && block->thread == request_->first) {
      const auto action = static_cast<BlockAction>(block->action);
      if (action == BlockAction::kSegmentAlloc || action == BlockAction::kSegmentMap ||
          action == BlockAction::kAlloc)
        time = request_->second;
      if (action != BlockAction::kSegmentAlloc && action != BlockAction::kSegmentMap)
        request_.reset();
    } else if (event) {
      request_.reset();
    }
    bucket_ = std::min(std::max(bucket_, time / out_.resolution_ns), out_.buckets - 1);
    ++moment_;
    for (auto& [ordinal, s] : states_) {
      if (bucket_ > s.open_bucket) close(ordinal, s, bucket_);
    }
    replay_.apply(record);
    if (alloc != nullptr && drawn_alloc(*alloc)) {
      // A segment too: the axis starts with the program's first allocation of any kind.
      DeviceAllocations& d = out_.devices[alloc->device];
      state(alloc->device);
      d.first_alloc_ns = std::min(d.first_alloc_ns, time);
      end_driver(alloc->address, time);
      pending_ = *alloc;
    } else if (const auto* f = std::get_if<format::FreeRecord>(&record)) {
      end_driver(f->address, time);
    } else if (block != nullptr) {
      on_block(*block, time);
    } else if (const auto* failed = std::get_if<format::AllocFailedRecord>(&record)) {
      failure(failed->device, time, failed->size, false);
    } else if (const auto* scope = std::get_if<format::ScopeRecord>(&record)) {
      on_scope(*scope);
    } else if (const auto* name = std::get_if<format::NameRecord>(&record)) {
      names_[name->id] = name->text;
    }
    after(time);
  }

  AllocationPass finish() {
    if (pending_) begin_driver(*pending_);
    pending_.reset();
    // Blocks live at the end: their classes now.
    replay_.roles().for_each_live([&](uint64_t address, uint32_t c) {
      const auto* e = blocks_.find(address);
      if (e != nullptr && e->value.band >= 0)
        band_classes_.push_back({e->value.device, static_cast<std::size_t>(e->value.band), c});
    });
    const RoleTracker& roles = replay_.roles();
    for (const auto& [device, band, c] : band_classes_)
      out_.devices[device].bands[band].role = roles.role_of_class(c);
    for (const auto& [device, snapshot, segment, piece, c] : piece_classes_) {
      out_.devices[device].snapshots[snapshot].segments[segment].pieces[piece].role =
          roles.role_of_class(c);
    }
    for (auto& [ordinal, state] : states_) {
      close(ordinal, state, out_.buckets);
      out_.devices[ordinal].moments = std::move(state.moment_times);
      finish_series(ordinal, state);
    }
    for (auto& [ordinal, d] : out_.devices) {
      if (!undrawn_.empty()) {
        std::vector<AllocationBand> kept;
        for (std::size_t i = 0; i < d.bands.size(); ++i) {
          if (!undrawn_.contains({ordinal, i})) kept.push_back(d.bands[i]);
        }
        d.bands = std::move(kept);
      }
      std::stable_sort(
          d.bands.begin(), d.bands.end(),
          [](const AllocationBand& a, const AllocationBand& b) { return a.start_ns < b.start_ns; });
    }
    return std::move(out_);
  }

 private:
  struct Open {
    int device = -1;
    long band = -1;  // index in the device's bands; -1 small
    uint32_t site = 0;
    uint64_t size = 0;
    uint32_t series = 0;  // a small one's
  };
  // The most a series' allocations held in each bucket, filled up to `last` (the buckets after
  // it hold `live`).
  // What a series' allocations held at each bucket's moment (below).
  struct Series {
    std::vector<uint64_t> values;
    uint64_t live = 0;
    uint64_t most = 0;
    uint64_t live_at_start = 0;  // of the bucket open now
    uint32_t site = AllocationPass::kOtherSite;
    Role role = Role::kUnknown;
    std::optional<uint32_t> role_class;
  };
  struct DeviceState {
    std::vector<Series> series;   // by Plan's index, the shared one last
    std::vector<uint64_t> cache;  // per bucket so far
    uint64_t cache_now = 0;
    bool peak_done = false;
    bool on_peak = false;
    uint64_t peak_allocated = 0;
    std::size_t peak_retakes = 0;
    long peak_snapshot = -1;
    bool highest_done = false;
    std::size_t next_moment = 0;
    long last_failure = -1;  // the snapshot of the failure just before, while nothing changed
    // Each bucket's moment: when the device held the most during it (the latest such record),
    // as the timeline takes its split. The series are written as they were then, so that the
    // page's stack at that moment adds up to what was live (each series' own most during the
    // bucket would not: a small allocation freed before another was made would count twice).
    uint64_t open_bucket = 0;
    uint64_t max_total = 0;
    uint64_t max_moment = 0;
    uint64_t max_time = 0;
    std::vector<std::tuple<uint64_t, uint32_t, uint64_t>> log;  // (moment, series, live after)
    std::vector<uint64_t> moment_times;                         // per bucket, closed ones
  };
  struct Segment {
    uint64_t size = 0;
    bool expandable = false;
    bool graph_pool = false;
    long span = -1;  // index in the device's segment_spans
  };
  struct BandClass {
    int device;
    std::size_t band;
    uint32_t role_class;
  };
  struct PieceClass {
    int device;
    std::size_t snapshot, segment, piece;
    uint32_t role_class;
  };

  // The site's index in out_.sites (kOtherSite past the limit) and its series (Plan's).
  std::pair<uint32_t, uint32_t> site_of(int allocator, uint32_t stack) {
    const uint64_t key = site_key(allocator, stack);
    if (const auto it = site_index_.find(key); it != site_index_.end()) return it->second;
    uint32_t index = AllocationPass::kOtherSite;
    if (out_.sites.size() < limits_.sites) {
      index = static_cast<uint32_t>(out_.sites.size());
      out_.sites.push_back({stack, allocator});
    }
    const auto own = plan_.series_of.find(key);
    const uint32_t series = own != plan_.series_of.end() ? own->second
                            : allocator >= 0             ? plan_.series
                                                         : plan_.series + 1;
    site_index_.emplace(key, std::make_pair(index, series));
    return {index, series};
  }

  DeviceState& state(int device) {
    auto [it, added] = states_.try_emplace(device);
    if (added) {
      out_.devices[device].first_alloc_ns = UINT64_MAX;
      DeviceState& s = it->second;
      s.open_bucket = bucket_;
      s.max_time = bucket_ * out_.resolution_ns;
      s.max_moment = moment_ - 1;
      s.moment_times.assign(out_.buckets, 0);
      for (uint64_t q = 0; q < bucket_; ++q) s.moment_times[q] = q * out_.resolution_ns;
    }
    return it->second;
  }

  // Starts an allocation: kept whole when large enough and the limit allows, else added to
  // its site's series.
  Open begin(int device, uint64_t address, uint64_t size, uint64_t time,
             std::pair<uint32_t, uint32_t> site_series, std::optional<Role> role, uint32_t module) {
    const auto [site, series_index] = site_series;
    DeviceState& s = state(device);
    DeviceAllocations& d = out_.devices[device];
    d.first_alloc_ns = std::min(d.first_alloc_ns, time);
    Open open{device, -1, site, size, 0};
    const bool whole = size >= plan_.whole && plan_.whole > 0;
    if (size >= out_.threshold_bytes && (whole || partial_ < plan_.quota || plan_.threshold == 0)) {
      if (!whole) ++partial_;
      open.band = static_cast<long>(d.bands.size());
      d.bands.push_back({time, AllocationBand::kLive, size, address, site,
                         role.value_or(Role::kUnknown), module});
    } else {
      ++d.small_count;
      open.series = series_index;
      if (plan_.blocks[series_index]) d.blocks_whole = false;
      if (s.series.size() <= plan_.series + 1) s.series.resize(plan_.series + 2);
      Series& series = s.series[open.series];
      if (series_index < plan_.series) series.site = site;
      if (role) series.role = *role;
      change(s, open.series, static_cast<int64_t>(size));
    }
    s.last_failure = -1;
    return open;
  }

  void end(const Open& open, uint64_t time, std::optional<uint32_t> role_class) {
    DeviceState& s = state(open.device);
    s.last_failure = -1;
    if (open.band >= 0) {
      out_.devices[open.device].bands[static_cast<std::size_t>(open.band)].end_ns = time;
      if (role_class)
        band_classes_.push_back({open.device, static_cast<std::size_t>(open.band), *role_class});
      return;
    }
    Series& series = s.series[open.series];
    if (role_class) series.role_class = role_class;
    change(s, open.series, -static_cast<int64_t>(open.size));
  }

  void change(DeviceState& s, uint32_t index, int64_t delta) {
    Series& series = s.series[index];
    if (series.values.empty()) series.values.assign(out_.buckets, 0);
    series.live = static_cast<uint64_t>(static_cast<int64_t>(series.live) + delta);
    series.most = std::max(series.most, series.live);
    s.log.emplace_back(moment_, index, series.live);
  }

  uint64_t device_total(int ordinal) {
    const auto it = replay_.summary().devices.find(ordinal);
    return it == replay_.summary().devices.end() ? 0 : it->second.live_bytes;
  }

  // Closes the device's open bucket and those up to `next` (none of which saw a record): each
  // series' value at the bucket's moment.
  void close(int ordinal, DeviceState& s, uint64_t next) {
    const uint64_t b = s.open_bucket;
    std::vector<uint64_t> at(s.series.size());
    for (std::size_t i = 0; i < s.series.size(); ++i) at[i] = s.series[i].live_at_start;
    for (const auto& [moment, index, live] : s.log) {
      if (moment <= s.max_moment) at[index] = live;
    }
    for (std::size_t i = 0; i < s.series.size(); ++i) {
      if (!s.series[i].values.empty()) s.series[i].values[b] = at[i];
    }
    s.moment_times[b] = s.max_time;
    for (uint64_t q = b + 1; q < next; ++q) {
      for (Series& series : s.series) {
        if (!series.values.empty()) series.values[q] = series.live;
      }
      s.moment_times[q] = q * out_.resolution_ns;
    }
    for (Series& series : s.series) series.live_at_start = series.live;
    s.log.clear();
    s.open_bucket = next;
    s.max_total = device_total(ordinal);
    s.max_moment = moment_ - 1;
    s.max_time = next * out_.resolution_ns;
  }

  void begin_driver(const format::AllocRecord& a) {
    // A driver allocation's role is its stack's owner's (library or the program's): by stack,
    // looked up once.
    auto [role, added] = driver_roles_.try_emplace(a.stack, Role::kUnknown);
    if (added) role->second = outside_role(owners_.of(a.stack));
    const Open open = begin(a.device, a.address, a.size, a.time_ns, site_of(-1, a.stack),
                            role->second, module_now(a.thread));
    if (const auto [e, added] = driver_.try_insert(a.address, open); !added) e->value = open;
  }

  void undraw_driver(uint64_t address) {
    auto* e = driver_.find(address);
    if (e == nullptr) return;
    const Open open = e->value;
    driver_.erase(e);
    if (open.band >= 0) {
      undrawn_.emplace(open.device, static_cast<std::size_t>(open.band));
    } else {
      DeviceState& s = state(open.device);
      --out_.devices[open.device].small_count;
      change(s, open.series, -static_cast<int64_t>(open.size));
    }
  }

  void end_driver(uint64_t address, uint64_t time) {
    auto* e = driver_.find(address);
    if (e == nullptr) return;
    end(e->value, time, std::nullopt);
    driver_.erase(e);
  }

  // Steps as the hooks report them: each optimizer step() and each root module's forward.
  void on_scope(const format::ScopeRecord& r) {
    const auto kind = static_cast<format::ScopeKind>(r.kind);
    const auto action = static_cast<format::ScopeAction>(r.action);
    if (kind == format::ScopeKind::kCudaGraph) {
      uint32_t& open = captures_open_[r.thread];
      if (action == format::ScopeAction::kExit) {
        if (open > 0) --open;
      } else {
        ++open;
      }
      return;
    }
    if (kind != format::ScopeKind::kModule && kind != format::ScopeKind::kOptimizer) return;
    if (kind == format::ScopeKind::kModule) {
      // The modules open on the thread, innermost last: an allocation's module.
      std::vector<uint32_t>& open = modules_open_[r.thread];
      if (action == format::ScopeAction::kExit) {
        if (!open.empty()) open.pop_back();
      } else {
        open.push_back(module_index(r.name));
      }
    }
    const bool module = kind == format::ScopeKind::kModule;
    OpenScope& open = module ? scopes_[r.thread].first : scopes_[r.thread].second;
    if (action == format::ScopeAction::kExit) {
      if (open.depth == 0) return;
      if (--open.depth == 0 && out_.steps.size() < limits_.steps)
        out_.steps.push_back({open.name, open.start, r.time_ns});
      return;
    }
    if (open.depth++ > 0) return;
    open.start = r.time_ns;
    const auto it = names_.find(r.name);
    const std::string name = it != names_.end() ? it->second : "";
    open.name = module ? "forward of " + (name.empty() ? std::string("the model") : name)
                       : "optimizer step" + (name.empty() ? std::string() : " (" + name + ")");
  }

  uint32_t module_index(uint32_t name) {
    const auto [it, added] = module_of_name_.try_emplace(name, 0);
    if (added && out_.modules.size() < kModulesKept) {
      const auto text = names_.find(name);
      it->second = static_cast<uint32_t>(out_.modules.size());
      out_.modules.push_back(text != names_.end() ? text->second : "");
    }
    return it->second;
  }

  uint32_t module_now(uint64_t thread) const {
    const auto it = modules_open_.find(thread);
    return it == modules_open_.end() || it->second.empty() ? 0 : it->second.back();
  }

  void on_block(const format::BlockRecord& b, uint64_t time) {
    const auto action = static_cast<BlockAction>(b.action);
    const auto key = std::make_pair(static_cast<int>(b.allocator), b.device);
    switch (action) {
      case BlockAction::kAlloc: {
        if (auto* e = blocks_.find(b.address); e != nullptr) {
          end(e->value, time, replay_.roles().last_ended());
          blocks_.erase(e);
        }
        blocks_.insert(b.address, begin(b.device, b.address, b.size, time,
                                        site_of(static_cast<int>(b.allocator), b.stack), {},
                                        module_now(b.thread)));
        break;
      }
      case BlockAction::kFreeRequested:
        if (auto* e = blocks_.find(b.address); e != nullptr) {
          end(e->value, time, replay_.roles().last_ended());
          blocks_.erase(e);
        }
        break;
      case BlockAction::kSegmentAlloc:
      case BlockAction::kSegmentMap: {
        // A segment whose driver allocation is drawn already (a bounded trace gives what its
        // checkpoint carried as all the allocations, then all the blocks): its blocks are drawn
        // instead, so the allocation is not.
        if (action == BlockAction::kSegmentAlloc) undraw_driver(b.address);
        DeviceAllocations& d = out_.devices[b.device];
        state(b.device);
        // A segment the allocator takes while a graph is captured on the thread is the graph's
        // private pool's (PyTorch gives a capture a pool of its own).
        const auto capture = captures_open_.find(b.thread);
        const bool graph_pool = capture != captures_open_.end() && capture->second > 0;
        long span = -1;
        if (d.segment_spans.size() < limits_.segment_spans) {
          span = static_cast<long>(d.segment_spans.size());
          d.segment_spans.push_back({time, AllocationBand::kLive, b.size, b.address, b.allocator,
                                     action == BlockAction::kSegmentMap ? 1u : 0u,
                                     graph_pool ? 1u : 0u});
        } else {
          d.segment_spans_complete = false;
        }
        segments_[key][b.address] = {b.size, action == BlockAction::kSegmentMap, graph_pool, span};
        break;
      }
      case BlockAction::kSegmentFree:
      case BlockAction::kSegmentUnmap: {
        auto& list = segments_[key];
        if (const auto it = list.find(b.address); it != list.end()) {
          if (it->second.span >= 0)
            out_.devices[b.device].segment_spans[static_cast<std::size_t>(it->second.span)][1] =
                time;
          list.erase(it);
        }
        break;
      }
      case BlockAction::kOom:
        failure(b.device, time, b.size, true);
        break;
      default:
        break;
    }
  }

  void after(uint64_t time) {
    for (auto& [ordinal, s] : states_) {
      if (const uint64_t total = device_total(ordinal); total >= s.max_total) {
        s.max_total = total;
        s.max_moment = moment_;
        s.max_time = time;
      }
      // The caching allocators' cache: the most it held during each bucket.
      const auto& blocks = replay_.blocks();
      const uint64_t reserved = blocks.reserved_bytes(ordinal);
      const uint64_t allocated = blocks.allocated_bytes(ordinal);
      if (s.cache.size() <= bucket_) s.cache.resize(bucket_ + 1, s.cache_now);
      s.cache_now = reserved > allocated ? reserved - allocated : 0;
      s.cache[bucket_] = std::max(s.cache[bucket_], s.cache_now);
      peak(ordinal, s, time, allocated);
      highest(ordinal, s, time, allocated);
      while (s.next_moment < moments_.size() && time >= moments_[s.next_moment]) {
        ++s.next_moment;
        if (has_segments(ordinal)) snapshot(ordinal, "moment", time, 0, std::nullopt);
      }
    }
  }

  // The peak's moment: of the records that keep the model's peak live, the one where the
  // allocators hand out the most (a request's segment comes before the block handed out of it).
  void peak(int ordinal, DeviceState& s, uint64_t time, uint64_t allocated) {
    if (s.peak_done) return;
    const auto model = trace_.devices.find(ordinal);
    const auto now = replay_.summary().devices.find(ordinal);
    if (model == trace_.devices.end() || now == replay_.summary().devices.end()) return;
    const bool at_peak = time >= model->second.peak_time_ns &&
                         now->second.live_bytes == model->second.peak_bytes &&
                         model->second.peak_bytes > 0;
    if (!at_peak) {
      if (s.on_peak) s.peak_done = true;
      return;
    }
    const bool first = !s.on_peak;
    s.on_peak = true;
    if (!first && (allocated <= s.peak_allocated || s.peak_retakes >= limits_.peak_retakes)) return;
    s.peak_allocated = allocated;
    ++s.peak_retakes;
    if (!has_segments(ordinal)) return;
    std::optional<std::size_t> at;
    if (s.peak_snapshot >= 0) at = static_cast<std::size_t>(s.peak_snapshot);
    s.peak_snapshot =
        static_cast<long>(snapshot(ordinal, "peak", model->second.peak_time_ns, 0, at));
  }

  // Where the caching allocators handed out the most (PyTorch's max_memory_allocated): the
  // moment their users came closest to not fitting. The device's peak is then a plateau of
  // reserved memory that is mostly their cache, whose moment shows segments mostly free.
  void highest(int ordinal, DeviceState& s, uint64_t time, uint64_t allocated) {
    if (s.highest_done || allocated == 0 || !has_segments(ordinal)) return;
    uint64_t highest = 0;
    for (const AllocatorUsage& a : trace_.allocators) {
      if (a.device == ordinal) highest += a.peak_allocated_bytes;
    }
    if (allocated < highest) return;
    s.highest_done = true;
    snapshot(ordinal, "highest_allocated", time, 0, std::nullopt);
  }

  void failure(int device, uint64_t time, uint64_t request, bool allocator) {
    if (!has_segments(device)) return;
    DeviceState& s = state(device);
    // The allocator's report of a request whose segment the driver just refused: one failure,
    // the allocator's request its figure.
    if (s.last_failure >= 0) {
      if (allocator) {
        out_.devices[device].snapshots[static_cast<std::size_t>(s.last_failure)].request_bytes =
            request;
      }
      return;
    }
    if (failures_ >= limits_.failures) return;
    ++failures_;
    s.last_failure = static_cast<long>(snapshot(device, "failure", time, request, std::nullopt));
  }

  bool has_segments(int device) const {
    for (const auto& [key, segments] : segments_) {
      if (key.second == device && !segments.empty()) return true;
    }
    return false;
  }

  // Takes the device's segments now, appended or in place of snapshot `at`; returns its index.
  std::size_t snapshot(int device, const char* kind, uint64_t time, uint64_t request,
                       std::optional<std::size_t> at) {
    SegmentSnapshot snap;
    snap.kind = kind;
    snap.time_ns = time;
    snap.request_bytes = request;
    // Every segment of the device, by address, and the live blocks in each.
    struct Live {
      uint64_t address, size;
      uint32_t site;
      std::optional<uint32_t> role_class;
    };
    std::vector<std::pair<uint64_t, SegmentState>> segments;
    for (const auto& [key, list] : segments_) {
      if (key.second != device) continue;
      for (const auto& [address, seg] : list)
        segments.push_back(
            {address, {address, seg.size, key.first, seg.expandable, seg.graph_pool, {}}});
    }
    std::sort(segments.begin(), segments.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::unordered_map<uint64_t, uint32_t> classes;
    replay_.roles().for_each_live([&](uint64_t address, uint32_t c) { classes[address] = c; });
    std::vector<Live> live;
    blocks_.for_each([&](uint64_t address, const Open& open) {
      if (open.device != device) return;
      const auto c = classes.find(address);
      live.push_back({address, open.size, open.site,
                      c == classes.end() ? std::nullopt : std::optional<uint32_t>(c->second)});
    });
    std::sort(live.begin(), live.end(),
              [](const Live& a, const Live& b) { return a.address < b.address; });
    std::size_t next = 0;
    std::size_t pieces = 0;
    DeviceAllocations& d = out_.devices[device];
    const std::size_t snapshot_index = at.value_or(d.snapshots.size());
    if (at) {
      std::erase_if(piece_classes_,
                    [&](const PieceClass& p) { return p.device == device && p.snapshot == *at; });
    }
    std::vector<SegmentState> kept;
    for (auto& [address, seg] : segments) {
      const uint64_t end = address + seg.size;
      while (next < live.size() && live[next].address < address) ++next;
      uint64_t at = address;
      std::vector<SegmentPiece> list;
      std::vector<std::optional<uint32_t>> list_classes;
      for (; next < live.size() && live[next].address < end; ++next) {
        const Live& b = live[next];
        if (b.address > at) {
          list.push_back({at - address, b.address - at, true, 0, Role::kUnknown});
          list_classes.push_back(std::nullopt);
        }
        const uint64_t size = std::min(b.size, end - b.address);
        list.push_back({b.address - address, size, false, b.site, Role::kUnknown});
        list_classes.push_back(b.role_class);
        at = std::max(at, b.address + size);
      }
      if (at < end) {
        list.push_back({at - address, end - at, true, 0, Role::kUnknown});
        list_classes.push_back(std::nullopt);
      }
      for (const SegmentPiece& p : list) {
        if (!p.free) continue;
        snap.free_bytes += p.size;
        snap.largest_free_bytes = std::max(snap.largest_free_bytes, p.size);
      }
      if (kept.size() >= limits_.segments || pieces + list.size() > limits_.pieces) {
        ++snap.segments_left_out;
        snap.pieces_left_out += list.size();
        continue;
      }
      pieces += list.size();
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (list_classes[i]) {
          piece_classes_.push_back({device, snapshot_index, kept.size(), i, *list_classes[i]});
        }
      }
      seg.pieces = std::move(list);
      kept.push_back(std::move(seg));
    }
    snap.segments = std::move(kept);
    if (at) {
      d.snapshots[*at] = std::move(snap);
    } else {
      d.snapshots.push_back(std::move(snap));
    }
    return snapshot_index;
  }

  void finish_series(int ordinal, DeviceState& s) {
    DeviceAllocations& d = out_.devices[ordinal];
    if (d.first_alloc_ns == UINT64_MAX) d.first_alloc_ns = 0;
    const uint64_t buckets = out_.buckets;
    s.cache.resize(buckets, s.cache_now);
    if (!d.segment_spans_complete &&
        std::any_of(s.cache.begin(), s.cache.end(), [](uint64_t v) { return v > 0; }))
      d.cache = std::move(s.cache);
    // The own series by the most each held, the shared one last.
    const RoleTracker& roles = replay_.roles();
    std::vector<std::pair<uint64_t, uint32_t>> ranked;
    for (uint32_t i = 0; i < s.series.size() && i < plan_.series; ++i) {
      if (s.series[i].most > 0) ranked.emplace_back(s.series[i].most, i);
    }
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (uint32_t shared = plan_.series; shared < plan_.series + 2; ++shared) {
      if (shared < s.series.size() && s.series[shared].most > 0)
        ranked.emplace_back(s.series[shared].most, shared);
    }
    for (const auto& [most, i] : ranked) {
      Series& series = s.series[i];
      const Role role = series.role_class ? roles.role_of_class(*series.role_class) : series.role;
      d.series.emplace_back(series.site, std::move(series.values));
      d.series_roles.push_back(i >= plan_.series ? Role::kUnknown : role);
      d.series_blocks.push_back(plan_.blocks[i]);
    }
  }

  const TraceSummary& trace_;
  OwnerLibraryCache owners_;
  const AllocationLimits& limits_;
  const Plan plan_;
  Replay replay_;
  AllocationPass out_;
  std::map<int, DeviceState> states_;
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> site_index_;
  std::unordered_map<uint32_t, Role> driver_roles_;  // by stack
  std::set<std::pair<int, std::size_t>> undrawn_;    // (device, band): segments drawn as blocks
  using Opens = FlatHashMap<uint64_t, Open, MixedHash>;
  Opens driver_;                                                         // by address
  Opens blocks_;                                                         // by address
  std::map<std::pair<int, int>, std::map<uint64_t, Segment>> segments_;  // (allocator, device)
  std::optional<format::AllocRecord> pending_;
  std::optional<std::pair<uint64_t, uint64_t>> request_;  // a segment's (thread, time)
  struct OpenScope {
    uint32_t depth = 0;
    uint64_t start = 0;
    std::string name;
  };
  std::unordered_map<uint64_t, std::pair<OpenScope, OpenScope>> scopes_;  // by thread: module, step
  std::unordered_map<uint32_t, std::string> names_;
  static constexpr std::size_t kModulesKept = 10'000;
  std::unordered_map<uint64_t, std::vector<uint32_t>> modules_open_;  // by thread
  std::unordered_map<uint64_t, uint32_t> captures_open_;              // by thread: graph captures
  std::unordered_map<uint32_t, uint32_t> module_of_name_;             // by Name id
  std::vector<BandClass> band_classes_;
  std::vector<PieceClass> piece_classes_;
  std::vector<uint64_t> moments_;
  std::size_t partial_ = 0;  // kept of the class the limit falls in
  std::size_t failures_ = 0;
  uint64_t bucket_ = 0;
  uint64_t moment_ = 0;  // records applied, the one being applied included
};

}  // namespace

AllocationPass read_allocation_pass(const TraceSummary& trace, uint64_t resolution_ns,
                                    uint64_t buckets, const AllocationLimits& limits) {
  if (resolution_ns == 0 || buckets == 0)
    throw std::invalid_argument("read_allocation_pass: no buckets");
  AllocationTracker tracker(trace, resolution_ns, buckets, limits, plan(trace, limits));
  read_records(trace, [&](const format::Record& record) { tracker.apply(record); });
  return tracker.finish();
}

}  // namespace gmt::analyzer
