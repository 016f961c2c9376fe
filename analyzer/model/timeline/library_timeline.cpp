// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/timeline/library_timeline.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "analyzer/model/input/mapped_file.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/model/owner_library.h"
#include "analyzer/model/replay.h"
#include "analyzer/model/roles/outside_roles.h"
#include "analyzer/model/roles/role_series.h"
#include "format/file_header.h"
#include "format/trace_reader.h"

namespace gmt::analyzer {
namespace {

// Libraries past this many distinct names share one slot: the page shows a few layers anyway,
// and the split kept per bucket stays small.
constexpr std::size_t kTrackedLibraries = 64;

bool is_event(const format::Record& record) {
  return std::holds_alternative<format::AllocRecord>(record) ||
         std::holds_alternative<format::FreeRecord>(record) ||
         std::holds_alternative<format::AllocFailedRecord>(record) ||
         std::holds_alternative<format::ContextDestroyedRecord>(record) ||
         std::holds_alternative<format::MapRecord>(record) ||
         std::holds_alternative<format::UnmapRecord>(record) ||
         std::holds_alternative<format::RetainHandleRecord>(record);
}

// Follows the replay's sites as records change them and keeps each library's live bytes per
// device. Which site a record changes is guessed from its address (an allocation names its
// site; a free, the site of the last allocation at its address); after each record every
// device's sum is checked against the replay's own total, and a device whose sum disagrees
// (context teardown, VMM releases and unmaps, a guess gone wrong) has all its sites read again.
// So the split is always exact, and costs O(1) per record in the common case.
class LibraryTracker {
 public:
  LibraryTracker(const TraceSummary& trace, uint64_t resolution_ns)
      : owners_(trace), resolution_ns_(resolution_ns) {}

  void apply(const format::Record& record) {
    ++moment_;
    const auto* block = std::get_if<format::BlockRecord>(&record);
    if (!is_event(record) && block == nullptr) {
      replay_.apply(record);
      return;
    }
    // Buckets only go forward: a record stamped a little before the one read last (threads
    // write in turn) lands in the bucket being read. The caching allocator's records of the
    // request a driver allocation served stay in its bucket (same_request()).
    const uint64_t bucket = same_request(record)
                                ? bucket_
                                : std::max(bucket_, format::record_time(record) / resolution_ns_);
    bucket_ = bucket;
    // Buckets with no change hold what was live when they began: carried before the change.
    for (auto& [ordinal, d] : devices_) carry(ordinal, d, bucket, moment_ - 1);
    std::optional<uint64_t> touched[2];
    if (const auto* a = std::get_if<format::AllocRecord>(&record)) {
      const uint64_t key = site_key(a->device, a->stack);
      if (auto it = last_site_at_.find(a->address); it != last_site_at_.end()) {
        touched[0] = it->second;
        it->second = key;
      } else {
        last_site_at_.emplace(a->address, key);
      }
      touched[1] = key;
    } else if (const auto* f = std::get_if<format::FreeRecord>(&record)) {
      if (auto it = last_site_at_.find(f->address); it != last_site_at_.end()) {
        touched[0] = it->second;
        last_site_at_.erase(it);
      }
    }
    replay_.apply(record);
    if (block != nullptr) follow_block(*block);
    for (const auto& key : touched) {
      if (key) update_site(*key);
    }
    for (const auto& [ordinal, summary] : replay_.summary().devices) {
      DeviceState& d = device(ordinal);
      if (d.total != summary.live_bytes) rescan(ordinal);
    }
    for (auto& [ordinal, d] : devices_) {
      d.reserved = replay_.blocks().reserved_bytes(ordinal);
      const uint64_t allocated = d.allocated = replay_.blocks().allocated_bytes(ordinal);
      Bucket& b = d.buckets[bucket];
      // Of the moments the bucket's most is live at, the one its caching allocators hand out
      // the most at (the latest of those), as the peak's roles are taken.
      if (d.total > b.total || (d.total == b.total && allocated >= b.allocated)) {
        if (d.changed || d.total > b.total) b.split = d.split;
        b.total = d.total;
        b.reserved = d.reserved;
        b.allocated = allocated;
        d.moments[bucket] = moment_;
      }
      d.changed = false;
    }
  }

  LibraryTimeline finish(uint64_t end_ns, std::size_t top) {
    LibraryTimeline out;
    out.resolution_ns = resolution_ns_;
    const uint64_t last = std::max(end_ns / resolution_ns_, bucket_);
    for (auto& [ordinal, d] : devices_) {
      carry(ordinal, d, last, moment_);
      LibraryTimeline::Device& device = out.devices[ordinal];
      // Each library's most bytes at any bucket ranks it.
      std::vector<std::pair<uint64_t, std::size_t>> ranked;
      for (std::size_t slot = 0; slot < names_.size(); ++slot) {
        uint64_t most = 0;
        for (const Bucket& b : d.buckets) most = std::max(most, held(b, slot));
        if (most > 0) ranked.emplace_back(most, slot);
      }
      std::sort(ranked.begin(), ranked.end(), [this](const auto& x, const auto& y) {
        return x.first != y.first ? x.first > y.first : names_[x.second] < names_[y.second];
      });
      std::vector<std::size_t> shown;
      bool rest = false;
      for (const auto& [most, slot] : ranked) {
        if (shown.size() < top && slot != overflow_slot_) {
          shown.push_back(slot);
        } else {
          rest = true;
        }
      }
      for (std::size_t slot : shown) device.libraries.push_back(names_[slot]);
      if (rest) device.libraries.push_back(kOtherLibraries);
      device.bytes.assign(device.libraries.size(), std::vector<uint64_t>(d.buckets.size(), 0));
      device.resident.reserve(d.buckets.size());
      for (std::size_t b = 0; b < d.buckets.size(); ++b) {
        const Bucket& bucket = d.buckets[b];
        device.resident.push_back(bucket.total);
        uint64_t layered = 0;
        for (std::size_t i = 0; i < shown.size(); ++i) {
          device.bytes[i][b] = held(bucket, shown[i]);
          layered += device.bytes[i][b];
        }
        if (rest) device.bytes.back()[b] = bucket.total - layered;
      }
      if (replay_.roles().recorded()) device.roles = roles_of(ordinal, d);
    }
    return out;
  }

 private:
  struct Bucket {
    uint64_t total = 0;
    std::vector<uint64_t> split;  // by library slot; shorter when libraries came later
    uint64_t reserved = 0;        // the caching allocators' segments then
    uint64_t allocated = 0;       // and their blocks
  };
  struct DeviceState {
    uint64_t total = 0;
    std::vector<uint64_t> split;
    uint64_t reserved = 0;
    uint64_t allocated = 0;
    std::vector<Bucket> buckets;
    std::vector<uint64_t> moments;  // per bucket, the record after which its most was live
    bool changed = false;
  };

  // Whether the record is a caching allocator's record of the request that the driver
  // allocation just before served, on its thread: the segment it made (or mapped), then the
  // block handed out of it. With the allocation they are one moment (a segment counted as the
  // allocator's from the start), as the peak's figures are.
  bool same_request(const format::Record& record) {
    if (const auto* a = std::get_if<format::AllocRecord>(&record)) {
      request_thread_ = a->thread;
      return false;
    }
    const auto* block = std::get_if<format::BlockRecord>(&record);
    if (!request_thread_ || block == nullptr || block->thread != *request_thread_) {
      request_thread_.reset();
      return false;
    }
    const auto action = static_cast<format::BlockAction>(block->action);
    if (action == format::BlockAction::kSegmentAlloc || action == format::BlockAction::kSegmentMap)
      return true;
    request_thread_.reset();
    return action == format::BlockAction::kAlloc;
  }

  // A caching allocator's block handed out or released: the role series follows it, on a
  // device whose buckets are kept (its blocks are placed as they close; a block of a device the
  // trace names no driver allocation of would wait for ever).
  void follow_block(const format::BlockRecord& r) {
    const auto action = static_cast<format::BlockAction>(r.action);
    if (action != format::BlockAction::kAlloc && action != format::BlockAction::kFreeRequested)
      return;
    if (!devices_.contains(r.device)) return;
    if (const auto ended = replay_.roles().last_ended()) series_.end(r.address, *ended, moment_);
    if (action == format::BlockAction::kAlloc) series_.begin(r.address, r.device, r.size, moment_);
  }

  // The device's buckets by role: its blocks' roles, its allocators' cache, and what lies
  // outside their segments by owner. They add up to each bucket's total.
  std::vector<std::pair<Role, std::vector<uint64_t>>> roles_of(int ordinal, const DeviceState& d) {
    std::array<std::vector<uint64_t>, kRoleCount> by_role =
        series_.finish(ordinal, d.moments, replay_.roles());
    const auto slot = [&](Role role) -> std::vector<uint64_t>& {
      return by_role[static_cast<std::size_t>(role)];
    };
    std::vector<bool> program_slot(names_.size());
    for (std::size_t s = 0; s < names_.size(); ++s)
      program_slot[s] = outside_role(names_[s]) == Role::kUnknown;
    for (std::size_t b = 0; b < d.buckets.size(); ++b) {
      const Bucket& bucket = d.buckets[b];
      uint64_t blocks = 0;
      for (const auto& series : by_role) blocks += series[b];
      const uint64_t segments = std::min(std::max(bucket.reserved, blocks), bucket.total);
      slot(Role::kAllocatorCache)[b] += segments > blocks ? segments - blocks : 0;
      uint64_t program = 0;
      for (std::size_t s = 0; s < bucket.split.size(); ++s) {
        if (program_slot[s]) program += bucket.split[s];
      }
      const uint64_t outside = bucket.total - std::max(segments, blocks);
      slot(Role::kUnknown)[b] += std::min(program, outside);
      slot(Role::kLibrary)[b] += outside - std::min(program, outside);
    }
    std::vector<std::pair<Role, std::vector<uint64_t>>> out;
    for (std::size_t i = 0; i < kRoleCount; ++i) {
      if (std::any_of(by_role[i].begin(), by_role[i].end(), [](uint64_t v) { return v > 0; }))
        out.emplace_back(static_cast<Role>(i), std::move(by_role[i]));
    }
    return out;
  }
  struct CachedSite {
    uint64_t resident = 0;
    std::size_t slot = 0;
  };

  static uint64_t held(const Bucket& b, std::size_t slot) {
    return slot < b.split.size() ? b.split[slot] : 0;
  }

  // Buckets up to `bucket` made, those new holding what is live after record `moment`; the
  // role series places the blocks that ended in the buckets now closed.
  void carry(int ordinal, DeviceState& d, uint64_t bucket, uint64_t moment) {
    if (d.buckets.size() > bucket) return;
    while (d.buckets.size() <= bucket) {
      d.buckets.push_back({d.total, d.split, d.reserved, d.allocated});
      d.moments.push_back(moment);
    }
    series_.place(ordinal, d.moments);
  }

  std::size_t slot_of(uint32_t stack) {
    const std::string& name = owners_.of(stack);
    if (auto it = slots_.find(name); it != slots_.end()) return it->second;
    if (names_.size() + 1 >= kTrackedLibraries) {
      if (overflow_slot_ == kNoSlot) {
        overflow_slot_ = names_.size();
        names_.push_back(kOtherLibraries);
      }
      return overflow_slot_;
    }
    slots_.emplace(name, names_.size());
    names_.push_back(name);
    return names_.size() - 1;
  }

  void update_site(uint64_t key) {
    const auto site = replay_.summary().sites.find(key);
    if (site == replay_.summary().sites.end()) return;
    auto [it, added] = cache_.try_emplace(key);
    CachedSite& cached = it->second;
    if (added) cached.slot = slot_of(site->second.stack);
    const uint64_t now = replay_.site_resident_bytes(key);
    if (now == cached.resident) return;
    DeviceState& d = device(site->second.device);
    if (d.split.size() <= cached.slot) d.split.resize(cached.slot + 1, 0);
    d.split[cached.slot] = d.split[cached.slot] - cached.resident + now;
    d.total = d.total - cached.resident + now;
    d.changed = true;
    cached.resident = now;
  }

  // The state of a device, made on its first record: it held nothing before that record, so its
  // buckets up to the record's are carried at 0 before the record's bytes are counted (else the
  // first allocation's bytes would fill every bucket from the trace's start).
  DeviceState& device(int ordinal) {
    const auto [entry, first_seen] = devices_.try_emplace(ordinal);
    if (first_seen) carry(ordinal, entry->second, bucket_, moment_ - 1);
    return entry->second;
  }

  void rescan(int ordinal) {
    for (const auto& [key, site] : replay_.summary().sites) {
      if (site.device == ordinal) update_site(key);
    }
  }

  static constexpr std::size_t kNoSlot = static_cast<std::size_t>(-1);

  OwnerLibraryCache owners_;
  uint64_t resolution_ns_;
  Replay replay_;
  std::map<int, DeviceState> devices_;
  std::unordered_map<uint64_t, CachedSite> cache_;       // by site_key
  std::unordered_map<uint64_t, uint64_t> last_site_at_;  // address -> site_key
  std::unordered_map<std::string, std::size_t> slots_;
  std::vector<std::string> names_;
  std::size_t overflow_slot_ = kNoSlot;
  uint64_t bucket_ = 0;  // the bucket of the record being applied
  uint64_t moment_ = 0;  // records applied, the one being applied included
  // The thread of the driver allocation just read, while its request's block records may follow.
  std::optional<uint64_t> request_thread_;
  RoleSeries series_;
};

}  // namespace

LibraryTimeline read_library_timeline(const TraceSummary& trace, uint64_t resolution_ns,
                                      std::size_t top_libraries) {
  if (resolution_ns == 0) throw std::invalid_argument("read_library_timeline: resolution 0");
  MappedFile file(trace.path);
  const format::HeaderCheck header = format::check_header(file.bytes());
  if (!header.ok) throw TraceError(trace.path + ": " + header.error);
  LibraryTracker tracker(trace, resolution_ns);
  format::TraceReader reader(file.bytes(), header.header, file.page_access());
  while (const std::optional<format::Record> record = reader.next()) tracker.apply(*record);
  return tracker.finish(trace.duration_ns, top_libraries);
}

}  // namespace gmt::analyzer
