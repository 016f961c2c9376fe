// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/blocks/extents_by_device.h"

namespace gmt::analyzer {

BlockExtents& ExtentsByDevice::at(uint32_t allocator, int device) {
  const auto [it, added] = extents_.try_emplace({allocator, device});
  if (added) {
    if (const auto s = settings_.find(allocator); s != settings_.end()) it->second.set(s->second);
  }
  return it->second;
}

void ExtentsByDevice::set(const format::AllocatorSettingsRecord& r) {
  const BlockExtents::Settings settings = BlockExtents::Settings::of(r);
  settings_.insert_or_assign(r.allocator, settings);
  for (auto& [key, extents] : extents_) {
    if (key.first == r.allocator) extents.set(settings);
  }
}

}  // namespace gmt::analyzer
