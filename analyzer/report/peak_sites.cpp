// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/peak_sites.h"

#include "analyzer/report/stack_frames.h"

namespace gmt::analyzer {

std::vector<std::string> resolve_peak_sites(TraceSummary& trace, std::size_t top) {
  std::vector<uint32_t> wanted;
  for (auto& [ordinal, device] : trace.devices) {
    const std::vector<PeakSite>& sites = device.shown_peak_sites();
    for (std::size_t i = 0; i < sites.size() && i < top; ++i) wanted.push_back(sites[i].stack);
  }
  std::vector<std::string> warnings;
  ResolvedStacks resolved = resolve_stacks(trace, wanted, warnings);
  for (auto& [ordinal, device] : trace.devices) {
    device.top_sites.clear();
    const std::vector<PeakSite>& sites = device.shown_peak_sites();
    for (std::size_t i = 0; i < sites.size() && i < top; ++i) {
      const PeakSite& site = sites[i];
      device.top_sites.push_back(ResolvedSite{
          site.bytes, site.count, site.cache ? std::vector<SiteFrame>{} : resolved[site.stack],
          site.allocator, site.cache});
    }
  }
  return warnings;
}

}  // namespace gmt::analyzer
