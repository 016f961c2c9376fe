// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/leak_classes.h"

#include <algorithm>
#include <map>

#include "analyzer/model/owner_library.h"

namespace gmt::analyzer {

std::vector<uint64_t> leak_sample_positions(uint64_t records) {
  std::vector<uint64_t> positions;
  for (uint64_t i = 1; i <= kLeakSamples && records > 0; ++i) {
    const uint64_t at = records * i / kLeakSamples;
    if (at > 0 && (positions.empty() || positions.back() != at - 1)) positions.push_back(at - 1);
  }
  return positions;
}

bool keeps_growing(const std::vector<uint64_t>& samples) {
  if (samples.size() < 2 || samples.back() <= samples.front()) return false;
  std::size_t rises = 0;
  for (std::size_t i = 1; i < samples.size(); ++i) {
    if (samples[i] < samples[i - 1]) return false;
    if (samples[i] > samples[i - 1]) ++rises;
  }
  return 2 * rises >= samples.size() - 1;
}

namespace {

// The samples a site's carried memory gives before the history kept.
struct HistorySamples {
  explicit HistorySamples(std::size_t n) : bytes(n, 0), counts(n, 0) {}
  std::vector<uint64_t> bytes;
  std::vector<uint64_t> counts;
};

// The history's samples, then the window's last `kept` (of `window`), for a site sampled at
// every one of the window's samples; none for a site born later, which growth does not judge.
template <class Site>
void splice(Site& site, const HistorySamples& history, std::size_t window, std::size_t kept) {
  const auto join = [&](std::vector<uint64_t>& samples, const std::vector<uint64_t>& before) {
    if (samples.size() != window) {
      samples.clear();
      return;
    }
    std::vector<uint64_t> joined = before;
    joined.insert(joined.end(), samples.end() - static_cast<std::ptrdiff_t>(kept), samples.end());
    samples = std::move(joined);
  };
  join(site.live_samples, history.bytes);
  join(site.live_count_samples, history.counts);
}

}  // namespace

void add_history_samples(TraceSummary& trace, const format::HistoryWindow& history) {
  const std::size_t window = trace.sample_times.size();
  if (!history.dropped || history.kept_from_ns == 0 || window == 0) return;
  // As unbounded, kLeakSamples in all, spread by records: the window keeps its share of them
  // (its last ones, one at least), the history dropped has the rest, spread in time (its
  // records' times are gone).
  const double records = static_cast<double>(history.dropped_records + trace.events);
  const double share = records > 0 ? static_cast<double>(trace.events) / records : 1;
  const std::size_t kept = std::clamp<std::size_t>(
      static_cast<std::size_t>(share * kLeakSamples + 0.5), 1, std::min(window, kLeakSamples));
  const std::size_t before = kLeakSamples - std::min(kept, kLeakSamples);
  if (before == 0) return;
  std::vector<uint64_t> times(before);
  for (std::size_t i = 0; i < before; ++i) times[i] = history.kept_from_ns * (i + 1) / before;
  std::map<uint64_t, HistorySamples> sites;
  std::map<uint64_t, HistorySamples> block_sites;
  for (const format::CarriedOrigin& c : history.carried) {
    auto& by_key = c.block ? block_sites : sites;
    const uint64_t key =
        c.block ? block_site_key(c.allocator, c.device, c.stack) : site_key(c.device, c.stack);
    HistorySamples& h = by_key.try_emplace(key, before).first->second;
    for (std::size_t i = 0; i < before; ++i) {
      if (c.time_ns > times[i]) continue;
      h.bytes[i] += c.size;
      ++h.counts[i];
    }
  }
  const HistorySamples none(before);
  const auto find = [&](const std::map<uint64_t, HistorySamples>& m, uint64_t key) {
    const auto it = m.find(key);
    return it != m.end() ? &it->second : &none;
  };
  for (auto& [key, site] : trace.sites) splice(site, *find(sites, key), window, kept);
  for (auto& [key, site] : trace.block_sites) splice(site, *find(block_sites, key), window, kept);
  std::vector<uint64_t> sample_times = times;
  sample_times.insert(sample_times.end(),
                      trace.sample_times.end() - static_cast<std::ptrdiff_t>(kept),
                      trace.sample_times.end());
  trace.sample_times = std::move(sample_times);
}

namespace {

// Growth between the first sample and sample `last`, per second (of a SiteStats or a
// BlockSiteStats).
template <class Site>
double growth_rate(const TraceSummary& trace, const Site& site, std::size_t last) {
  const double seconds =
      static_cast<double>(trace.sample_times[last] - trace.sample_times.front()) / 1e9;
  const double grown =
      static_cast<double>(site.live_samples[last]) - static_cast<double>(site.live_samples.front());
  return seconds > 0 ? grown / seconds : 0;
}

// Growth is judged only of a site that allocated at least as often as the samples are taken, or
// never freed: with fewer allocations and some frees, which of its frees fall between two
// samples decides what the samples show, and that depends on how many records (driver samples
// among them) the run wrote.
template <class Site>
bool judged_by_growth(const TraceSummary& trace, const Site& site) {
  return (site.allocations >= kLeakSamples || site.live_count == site.allocations) &&
         site.live_samples.size() == trace.sample_times.size();
}

// A site that kept growing until the trace's last stretch and then gave memory back: a Python
// program frees what a leak kept when its modules are torn down at exit, after the harm (the
// growth, the OOM it leads to) was done.
template <class Site>
bool grew_until_exit(const TraceSummary& trace, const Site& site) {
  const std::size_t n = site.live_samples.size();
  if (!judged_by_growth(trace, site) || n < 4 || site.live_count_samples.size() != n) return false;
  if (site.live_samples[n - 1] >= site.live_samples[n - 2]) return false;
  const std::vector<uint64_t> before_exit(site.live_samples.begin(), site.live_samples.end() - 1);
  return keeps_growing(before_exit);
}

// A caching allocator's blocks never freed, by site; then what each allocator holds free (its
// segments less its live blocks), in one `cached` group per allocator and device.
void classify_blocks(TraceSummary& trace) {
  for (const auto& [key, site] : trace.block_sites) {
    LeakGroup group{site.device, site.stack, LeakClass::kUnfreed, 0, 0, 0, 0};
    group.allocator = static_cast<int>(site.allocator);
    if (grew_until_exit(trace, site)) {
      const std::size_t last = site.live_samples.size() - 2;
      group.leak_class = LeakClass::kProbableLeak;
      group.bytes = group.resident_bytes = site.live_samples[last];
      group.count = site.live_count_samples[last];
      group.growth_bytes_per_s = growth_rate(trace, site, last);
      group.freed_at_exit = true;
      trace.leaks.push_back(group);
      continue;
    }
    if (site.live_count == 0) continue;
    group.bytes = group.resident_bytes = site.live_bytes;
    group.count = site.live_count;
    if (judged_by_growth(trace, site) && keeps_growing(site.live_samples)) {
      group.leak_class = LeakClass::kProbableLeak;
      group.growth_bytes_per_s = growth_rate(trace, site, site.live_samples.size() - 1);
    }
    trace.leaks.push_back(group);
  }
  for (const AllocatorUsage& a : trace.allocators) {
    if (a.reserved_bytes <= a.allocated_bytes) continue;
    LeakGroup group{a.device,
                    0,
                    LeakClass::kCached,
                    a.reserved_bytes - a.allocated_bytes,
                    a.reserved_bytes - a.allocated_bytes,
                    a.live_segments,
                    0};
    group.allocator = static_cast<int>(a.allocator);
    trace.leaks.push_back(group);
  }
}

}  // namespace

void classify_leaks(TraceSummary& trace) {
  OwnerLibraryCache owners(trace);
  trace.leaks.clear();
  for (const auto& [key, site] : trace.sites) {
    if (site.torn_down_count > 0) {
      trace.leaks.push_back(LeakGroup{site.device, site.stack, LeakClass::kTeardown,
                                      site.torn_down_bytes, site.torn_down_resident_bytes,
                                      site.torn_down_count, 0});
    }
    // Segments a caching allocator reported are told by its blocks (classify_blocks()): the
    // site that grew the cache is not where the memory is kept.
    const bool framework = site.framework_segments;
    if (!framework && grew_until_exit(trace, site)) {
      const std::size_t last = site.live_samples.size() - 2;
      LeakGroup group{site.device,
                      site.stack,
                      LeakClass::kProbableLeak,
                      site.live_samples[last],
                      site.device >= 0 ? site.live_samples[last] : 0,
                      site.live_count_samples[last],
                      growth_rate(trace, site, last)};
      group.freed_at_exit = true;
      trace.leaks.push_back(group);
      continue;
    }
    if (site.live_count == site.framework_segment_count) continue;
    LeakGroup group{site.device,
                    site.stack,
                    LeakClass::kUnfreed,
                    site.live_bytes - site.framework_segment_bytes,
                    site.live_resident_bytes - site.framework_segment_bytes,
                    site.live_count - site.framework_segment_count,
                    0};
    // A growing site is reported as a probable leak even inside a caching allocator: growth
    // without bound is what a leak looks like when a cache sits in between.
    if (!framework && judged_by_growth(trace, site) && keeps_growing(site.live_samples)) {
      group.leak_class = LeakClass::kProbableLeak;
      group.growth_bytes_per_s = growth_rate(trace, site, site.live_samples.size() - 1);
    } else if (keeps_memory_on_purpose(owners.of(site.stack))) {
      // Checked before the caching allocators: XLA's allocator is one, and its preallocation
      // is what a library keeps.
      group.leak_class = LeakClass::kLibraryCache;
    } else if (caching_allocator_library(owners.of(site.stack))) {
      group.leak_class = LeakClass::kCached;
    }
    trace.leaks.push_back(group);
  }
  classify_blocks(trace);
  std::sort(trace.leaks.begin(), trace.leaks.end(), [](const LeakGroup& a, const LeakGroup& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.device != b.device) return a.device < b.device;
    if (a.stack != b.stack) return a.stack < b.stack;
    if (a.leak_class != b.leak_class) return a.leak_class < b.leak_class;
    return a.allocator < b.allocator;
  });
}

uint64_t leaked_on(const TraceSummary& trace, int device) {
  uint64_t bytes = 0;
  for (const LeakGroup& g : trace.leaks) {
    if (g.device == device && unintended(g.leak_class)) bytes += g.resident_bytes;
  }
  return bytes;
}

const char* allocator_name(int allocator) {
  const char* library = allocator_library(allocator);
  return library != nullptr ? library : "other";
}

std::string allocator_cache_name(int allocator) {
  return std::string("(") + allocator_name(allocator) + " cache: free)";
}

const char* leak_class_name(LeakClass c) {
  switch (c) {
    case LeakClass::kTeardown:
      return "teardown";
    case LeakClass::kCached:
      return "cached";
    case LeakClass::kLibraryCache:
      return "library_cache";
    case LeakClass::kProbableLeak:
      return "probable_leak";
    case LeakClass::kUnfreed:
      return "unfreed";
  }
  return "unfreed";
}

}  // namespace gmt::analyzer
