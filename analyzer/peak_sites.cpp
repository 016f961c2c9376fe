#include "analyzer/peak_sites.h"

#include "analyzer/symbolize/symbolizer.h"

namespace gmt::analyzer {

std::vector<std::string> resolve_peak_sites(TraceSummary& trace, std::size_t top) {
  Symbolizer symbolizer;
  for (const format::ModuleRecord& m : trace.modules) {
    symbolizer.add_module(ModuleInfo{m.path, m.load_base, m.start, m.end, m.build_id});
  }
  for (auto& [ordinal, device] : trace.devices) {
    device.top_sites.clear();
    for (std::size_t i = 0; i < device.peak_sites.size() && i < top; ++i) {
      const PeakSite& site = device.peak_sites[i];
      ResolvedSite resolved{site.bytes, site.count, {}};
      if (auto stack = trace.stacks.find(site.stack); stack != trace.stacks.end()) {
        for (uint64_t address : stack->second) {
          // Every recorded frame is a return address: the call is the instruction before it.
          for (const SymbolizedFrame& f : symbolizer.symbolize(address, true)) {
            SiteFrame frame;
            frame.function = f.function;
            frame.file = f.file;
            frame.line = f.line;
            if (!f.module.empty()) frame.module = f.module;
            resolved.frames.push_back(std::move(frame));
          }
        }
      }
      device.top_sites.push_back(std::move(resolved));
    }
  }
  return symbolizer.warnings();
}

}  // namespace gmt::analyzer
