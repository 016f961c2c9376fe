// SPDX-License-Identifier: Apache-2.0
// The block extents of each caching allocator whose blocks are rebuilt (block_extents.h), one
// model per device, each following the settings the allocator's AllocatorSettings record gave,
// whether the record came before the device's first block or after it.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include "analyzer/model/blocks/block_extents.h"
#include "format/records.h"

namespace gmt::analyzer {

class ExtentsByDevice {
 public:
  // The model of `allocator` on `device`, made on first use; its address is stable.
  BlockExtents& at(uint32_t allocator, int device);
  // The allocator's settings, for its models from now on.
  void set(const format::AllocatorSettingsRecord& r);

 private:
  std::map<std::pair<uint32_t, int>, BlockExtents> extents_;
  std::map<uint32_t, BlockExtents::Settings> settings_;  // by allocator
};

}  // namespace gmt::analyzer
