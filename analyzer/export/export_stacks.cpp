// SPDX-License-Identifier: Apache-2.0
#include "analyzer/export/export_stacks.h"

#include "analyzer/model/leak_classes.h"

namespace gmt::analyzer {

std::string device_root(int device) {
  return device >= 0 ? "device " + std::to_string(device) : std::string("no device");
}

std::vector<WeightedStack> peak_stacks(const TraceSummary& trace) {
  std::vector<WeightedStack> out;
  for (const auto& [ordinal, d] : trace.devices) {
    for (const PeakSite& site : d.peak_sites) {
      out.push_back({{device_root(ordinal)}, ordinal, site.stack, site.bytes, site.count});
    }
  }
  return out;
}

std::vector<WeightedStack> leak_stacks(const TraceSummary& trace) {
  std::vector<WeightedStack> out;
  for (const LeakGroup& g : trace.leaks) {
    if (g.leak_class == LeakClass::kTeardown || g.bytes == 0) continue;
    WeightedStack s{{device_root(g.device), leak_class_name(g.leak_class)},
                    g.device,
                    g.stack,
                    g.bytes,
                    g.count};
    if (g.allocator >= 0 && g.stack == 0 && g.leak_class == LeakClass::kCached)
      s.no_stack_frame = allocator_cache_name(g.allocator);
    out.push_back(std::move(s));
  }
  return out;
}

ResolvedStacks resolve_weighted(TraceSummary& trace, const std::vector<WeightedStack>& stacks,
                                FrameMode mode) {
  std::vector<uint32_t> ids;
  ids.reserve(stacks.size());
  for (const WeightedStack& s : stacks) ids.push_back(s.stack);
  ResolvedStacks resolved = resolve_stacks(trace, ids, trace.symbolization_warnings);
  for (auto& [id, frames] : resolved) frames = flame_frames(frames, mode);
  return resolved;
}

std::string frame_label(const SiteFrame& frame) {
  if (frame.file || !frame.module || unsymbolized(frame)) return frame.function;
  const std::string& module = *frame.module;
  return frame.function + " (" + module.substr(module.find_last_of('/') + 1) + ")";
}

}  // namespace gmt::analyzer
