// SPDX-License-Identifier: Apache-2.0
#include "analyzer/html/allocation_pass.h"

#include <algorithm>
#include <array>
#include <optional>
#include <unordered_map>

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

// The smallest size kept whole: the largest allocations, at most `limit` of them.
uint64_t band_threshold(const TraceSummary& trace, std::size_t limit) {
  std::array<uint64_t, kSizeClasses> counts{};
  read_records(trace, [&](const format::Record& record) {
    if (const auto* a = std::get_if<format::AllocRecord>(&record)) {
      if (drawn_alloc(*a)) ++counts[size_class(a->size)];
    } else if (const auto* b = std::get_if<format::BlockRecord>(&record)) {
      if (static_cast<BlockAction>(b->action) == BlockAction::kAlloc) ++counts[size_class(b->size)];
    }
  });
  uint64_t kept = 0;
  for (std::size_t c = kSizeClasses; c-- > 0;) {
    if (kept + counts[c] > limit) return class_floor(c + 1);
    kept += counts[c];
  }
  return 0;
}

class AllocationTracker {
 public:
  AllocationTracker(const TraceSummary& trace, uint64_t resolution_ns, uint64_t buckets,
                    const AllocationLimits& limits, uint64_t threshold)
      : trace_(trace), owners_(trace), limits_(limits) {
    out_.resolution_ns = resolution_ns;
    out_.buckets = buckets;
    out_.threshold_bytes = threshold;
    out_.sites.push_back({});  // kOtherSite
    for (std::size_t k = 0; k < limits.moments; ++k) {
      moments_.push_back(trace.duration_ns / limits.moments * k +
                         trace.duration_ns / limits.moments / 2);
    }
  }

  void apply(const format::Record& record) {
    const uint64_t time = format::record_time(record);
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
      pending_.reset();
    }
    bucket_ = std::min(std::max(bucket_, time / out_.resolution_ns), out_.buckets - 1);
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
    }
    after(time);
  }

  AllocationPass finish() {
    if (pending_) begin_driver(*pending_);
    pending_.reset();
    // Blocks live at the end: their classes now.
    replay_.roles().for_each_live([&](uint64_t address, uint32_t c) {
      const auto it = blocks_.find(address);
      if (it != blocks_.end() && it->second.band >= 0)
        band_classes_.push_back({it->second.device, static_cast<std::size_t>(it->second.band), c});
    });
    const RoleTracker& roles = replay_.roles();
    for (const auto& [device, band, c] : band_classes_)
      out_.devices[device].bands[band].role = roles.role_of_class(c);
    for (const auto& [device, snapshot, segment, piece, c] : piece_classes_) {
      out_.devices[device].snapshots[snapshot].segments[segment].pieces[piece].role =
          roles.role_of_class(c);
    }
    for (auto& [ordinal, state] : states_) finish_series(ordinal, state);
    for (auto& [ordinal, d] : out_.devices) {
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
    int allocator = -1;
  };
  struct SiteSeries {
    uint64_t live = 0;
    uint64_t most = 0;
    // (bucket, the most during it, what was live at its end): buckets without an entry hold
    // the end of the one before.
    std::vector<std::array<uint64_t, 3>> entries;
    Role role = Role::kUnknown;
    std::optional<uint32_t> role_class;
  };
  struct DeviceState {
    std::unordered_map<uint32_t, SiteSeries> sites;
    std::vector<uint64_t> cache;  // per bucket so far
    uint64_t cache_now = 0;
    bool peak_done = false;
    bool on_peak = false;
    uint64_t peak_allocated = 0;
    std::size_t peak_retakes = 0;
    long peak_snapshot = -1;
    std::size_t next_moment = 0;
    long last_failure = -1;  // the snapshot of the failure just before, while nothing changed
  };
  struct Segment {
    uint64_t size = 0;
    bool expandable = false;
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

  uint32_t site_of(int allocator, uint32_t stack) {
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(allocator)) << 32) | stack;
    if (const auto it = site_index_.find(key); it != site_index_.end()) return it->second;
    uint32_t index = AllocationPass::kOtherSite;
    if (out_.sites.size() < limits_.sites) {
      index = static_cast<uint32_t>(out_.sites.size());
      out_.sites.push_back({stack, allocator});
    }
    site_index_.emplace(key, index);
    return index;
  }

  DeviceState& state(int device) {
    auto [it, added] = states_.try_emplace(device);
    if (added) out_.devices[device].first_alloc_ns = UINT64_MAX;
    return it->second;
  }

  // Starts an allocation: kept whole when large enough and the limit allows, else added to
  // its site's series.
  Open begin(int device, uint64_t address, uint64_t size, uint64_t time, uint32_t site,
             int allocator, std::optional<Role> role) {
    DeviceState& s = state(device);
    DeviceAllocations& d = out_.devices[device];
    d.first_alloc_ns = std::min(d.first_alloc_ns, time);
    Open open{device, -1, site, size, allocator};
    if (size >= out_.threshold_bytes && bands_ < limits_.bands) {
      ++bands_;
      open.band = static_cast<long>(d.bands.size());
      d.bands.push_back(
          {time, AllocationBand::kLive, size, address, site, role.value_or(Role::kUnknown)});
    } else {
      ++d.small_count;
      SiteSeries& series = s.sites[site];
      if (role) series.role = *role;
      change(series, static_cast<int64_t>(size));
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
    SiteSeries& series = s.sites[open.site];
    if (role_class) series.role_class = role_class;
    change(series, -static_cast<int64_t>(open.size));
  }

  void change(SiteSeries& series, int64_t delta) {
    series.live = static_cast<uint64_t>(static_cast<int64_t>(series.live) + delta);
    series.most = std::max(series.most, series.live);
    if (series.entries.empty() || series.entries.back()[0] != bucket_) {
      series.entries.push_back({bucket_, series.live, series.live});
    } else {
      auto& e = series.entries.back();
      e[1] = std::max(e[1], series.live);
      e[2] = series.live;
    }
  }

  void begin_driver(const format::AllocRecord& a) {
    const uint32_t site = site_of(-1, a.stack);
    const Open open =
        begin(a.device, a.address, a.size, a.time_ns, site, -1, outside_role(owners_.of(a.stack)));
    driver_[a.address] = open;
  }

  void end_driver(uint64_t address, uint64_t time) {
    const auto it = driver_.find(address);
    if (it == driver_.end()) return;
    end(it->second, time, std::nullopt);
    driver_.erase(it);
  }

  void on_block(const format::BlockRecord& b, uint64_t time) {
    const auto action = static_cast<BlockAction>(b.action);
    const auto key = std::make_pair(static_cast<int>(b.allocator), b.device);
    switch (action) {
      case BlockAction::kAlloc: {
        if (const auto it = blocks_.find(b.address); it != blocks_.end()) {
          end(it->second, time, replay_.roles().last_ended());
          blocks_.erase(it);
        }
        const uint32_t site = site_of(static_cast<int>(b.allocator), b.stack);
        blocks_[b.address] =
            begin(b.device, b.address, b.size, time, site, static_cast<int>(b.allocator), {});
        break;
      }
      case BlockAction::kFreeRequested:
        if (const auto it = blocks_.find(b.address); it != blocks_.end()) {
          end(it->second, time, replay_.roles().last_ended());
          blocks_.erase(it);
        }
        break;
      case BlockAction::kSegmentAlloc:
      case BlockAction::kSegmentMap: {
        DeviceAllocations& d = out_.devices[b.device];
        state(b.device);
        long span = -1;
        if (d.segment_spans.size() < limits_.segment_spans) {
          span = static_cast<long>(d.segment_spans.size());
          d.segment_spans.push_back({time, AllocationBand::kLive, b.size});
        } else {
          d.segment_spans_complete = false;
        }
        segments_[key][b.address] = {b.size, action == BlockAction::kSegmentMap, span};
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
      // The caching allocators' cache: the most it held during each bucket.
      const auto& blocks = replay_.blocks();
      const uint64_t reserved = blocks.reserved_bytes(ordinal);
      const uint64_t allocated = blocks.allocated_bytes(ordinal);
      if (s.cache.size() <= bucket_) s.cache.resize(bucket_ + 1, s.cache_now);
      s.cache_now = reserved > allocated ? reserved - allocated : 0;
      s.cache[bucket_] = std::max(s.cache[bucket_], s.cache_now);
      peak(ordinal, s, time, allocated);
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
        segments.push_back({address, {address, seg.size, key.first, seg.expandable, {}}});
    }
    std::sort(segments.begin(), segments.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::unordered_map<uint64_t, uint32_t> classes;
    replay_.roles().for_each_live([&](uint64_t address, uint32_t c) { classes[address] = c; });
    std::vector<Live> live;
    for (const auto& [address, open] : blocks_) {
      if (open.device != device) continue;
      const auto c = classes.find(address);
      live.push_back({address, open.size, open.site,
                      c == classes.end() ? std::nullopt : std::optional<uint32_t>(c->second)});
    }
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
    std::vector<std::pair<uint64_t, uint32_t>> ranked;
    for (const auto& [site, series] : s.sites) {
      if (series.most > 0) ranked.emplace_back(series.most, site);
    }
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    const auto dense = [buckets](const SiteSeries& series) {
      std::vector<uint64_t> values(buckets, 0);
      uint64_t carried = 0;
      std::size_t e = 0;
      for (uint64_t b = 0; b < buckets; ++b) {
        if (e < series.entries.size() && series.entries[e][0] == b) {
          values[b] = series.entries[e][1];
          carried = series.entries[e][2];
          ++e;
        } else {
          values[b] = carried;
        }
      }
      return values;
    };
    const RoleTracker& roles = replay_.roles();
    std::vector<uint64_t> other;
    for (std::size_t i = 0; i < ranked.size(); ++i) {
      const SiteSeries& series = s.sites[ranked[i].second];
      std::vector<uint64_t> values = dense(series);
      const Role role = series.role_class ? roles.role_of_class(*series.role_class) : series.role;
      if (i + 1 < limits_.series || ranked.size() == limits_.series) {
        d.series.emplace_back(ranked[i].second, std::move(values));
        d.series_roles.push_back(role);
      } else {
        if (other.empty()) other.assign(buckets, 0);
        for (uint64_t b = 0; b < buckets; ++b) other[b] += values[b];
      }
    }
    if (!other.empty()) {
      d.series.emplace_back(AllocationPass::kOtherSite, std::move(other));
      d.series_roles.push_back(Role::kUnknown);
    }
  }

  const TraceSummary& trace_;
  OwnerLibraryCache owners_;
  const AllocationLimits& limits_;
  Replay replay_;
  AllocationPass out_;
  std::map<int, DeviceState> states_;
  std::unordered_map<uint64_t, uint32_t> site_index_;
  std::unordered_map<uint64_t, Open> driver_;                            // by address
  std::unordered_map<uint64_t, Open> blocks_;                            // by address
  std::map<std::pair<int, int>, std::map<uint64_t, Segment>> segments_;  // (allocator, device)
  std::optional<format::AllocRecord> pending_;
  std::vector<BandClass> band_classes_;
  std::vector<PieceClass> piece_classes_;
  std::vector<uint64_t> moments_;
  std::size_t bands_ = 0;
  std::size_t failures_ = 0;
  uint64_t bucket_ = 0;
};

}  // namespace

AllocationPass read_allocation_pass(const TraceSummary& trace, uint64_t resolution_ns,
                                    uint64_t buckets, const AllocationLimits& limits) {
  if (resolution_ns == 0 || buckets == 0)
    throw std::invalid_argument("read_allocation_pass: no buckets");
  const uint64_t threshold = band_threshold(trace, limits.bands);
  AllocationTracker tracker(trace, resolution_ns, buckets, limits, threshold);
  read_records(trace, [&](const format::Record& record) { tracker.apply(record); });
  return tracker.finish();
}

}  // namespace gmt::analyzer
