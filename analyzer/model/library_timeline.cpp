// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/library_timeline.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "analyzer/model/input/mapped_file.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/model/owner_library.h"
#include "analyzer/model/replay.h"
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
    if (!is_event(record)) {
      replay_.apply(record);
      return;
    }
    const uint64_t bucket = format::record_time(record) / resolution_ns_;
    bucket_ = bucket;
    // Buckets with no change hold what was live when they began: carried before the change.
    for (auto& [ordinal, d] : devices_) carry(d, bucket);
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
    for (const auto& key : touched) {
      if (key) update_site(*key);
    }
    for (const auto& [ordinal, summary] : replay_.summary().devices) {
      DeviceState& d = device(ordinal);
      if (d.total != summary.live_bytes) rescan(ordinal);
      if (!d.changed) continue;
      carry(d, bucket);
      Bucket& b = d.buckets[bucket];
      if (d.total > b.total) {
        b.total = d.total;
        b.split = d.split;
      }
      d.changed = false;
    }
  }

  LibraryTimeline finish(uint64_t end_ns, std::size_t top) {
    LibraryTimeline out;
    out.resolution_ns = resolution_ns_;
    const uint64_t last = end_ns / resolution_ns_;
    for (auto& [ordinal, d] : devices_) {
      carry(d, last);
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
    }
    return out;
  }

 private:
  struct Bucket {
    uint64_t total = 0;
    std::vector<uint64_t> split;  // by library slot; shorter when libraries came later
  };
  struct DeviceState {
    uint64_t total = 0;
    std::vector<uint64_t> split;
    std::vector<Bucket> buckets;
    bool changed = false;
  };
  struct CachedSite {
    uint64_t resident = 0;
    std::size_t slot = 0;
  };

  static uint64_t held(const Bucket& b, std::size_t slot) {
    return slot < b.split.size() ? b.split[slot] : 0;
  }

  static void carry(DeviceState& d, uint64_t bucket) {
    while (d.buckets.size() <= bucket) d.buckets.push_back({d.total, d.split});
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
    if (first_seen) carry(entry->second, bucket_);
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
