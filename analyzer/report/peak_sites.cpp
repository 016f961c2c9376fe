// SPDX-License-Identifier: Apache-2.0
#include "analyzer/report/peak_sites.h"

#include "analyzer/report/stack_frames.h"

namespace gmt::analyzer {

std::vector<std::string> resolve_peak_sites(TraceSummary& trace, std::size_t top) {
  std::vector<uint32_t> wanted;
  for (auto& [ordinal, device] : trace.devices) {
    for (std::size_t i = 0; i < device.peak_sites.size() && i < top; ++i)
      wanted.push_back(device.peak_sites[i].stack);
  }
  std::vector<std::string> warnings;
  ResolvedStacks resolved = resolve_stacks(trace, wanted, warnings);
  for (auto& [ordinal, device] : trace.devices) {
    device.top_sites.clear();
    for (std::size_t i = 0; i < device.peak_sites.size() && i < top; ++i) {
      const PeakSite& site = device.peak_sites[i];
      device.top_sites.push_back(ResolvedSite{site.bytes, site.count, resolved[site.stack]});
    }
  }
  return warnings;
}

}  // namespace gmt::analyzer
