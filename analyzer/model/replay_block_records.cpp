// SPDX-License-Identifier: Apache-2.0
// The replay of a caching allocator's block events (the state is BlockReplay's): the blocks'
// figures go to the views as the framework's allocated and reserved bytes, and the segments the
// allocator reported are told apart from the other driver allocations of their sites.
#include "analyzer/model/replay.h"

namespace gmt::analyzer {

void Replay::on(const format::BlockRecord& r) {
  summary_.duration_ns = std::max(summary_.duration_ns, r.time_ns);
  blocks_.on(r);
  if (r.action == static_cast<uint32_t>(format::BlockAction::kSegmentAlloc)) {
    if (const auto* e = live_.find(Key{Space::kAddress, r.address})) {
      site_rest_[e->site].stats->framework_segments = true;
    }
  }
  views_.framework_blocks(r.device, blocks_.allocated_bytes(r.device),
                          blocks_.reserved_bytes(r.device), r.time_ns);
}

void Replay::finish_blocks() {
  for (auto& [key, site] : summary_.sites) {
    site.framework_segment_bytes = 0;
    site.framework_segment_count = 0;
  }
  blocks_.for_each_live_segment([&](uint64_t address) {
    if (const auto* e = live_.find(Key{Space::kAddress, address})) {
      SiteStats& site = *site_rest_[e->site].stats;
      site.framework_segments = true;
      site.framework_segment_bytes += e->size;
      ++site.framework_segment_count;
    }
  });
  blocks_.finish(summary_);
}

}  // namespace gmt::analyzer
