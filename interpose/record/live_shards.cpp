// SPDX-License-Identifier: Apache-2.0
#include "interpose/record/live_shards.h"

#include <algorithm>

namespace gmt::interpose {

LiveShards::LiveShards(unsigned hint_bits)
    : hints_(std::make_unique<std::atomic<uint8_t>[]>(std::size_t{1} << hint_bits)),
      hint_mask_((std::size_t{1} << hint_bits) - 1) {}

void LiveShards::lock_all() {
  for (Shard& s : shards_) s.lock.lock();
}

void LiveShards::unlock_all() {
  for (auto s = shards_.rbegin(); s != shards_.rend(); ++s) s->lock.unlock();
}

uint64_t LiveShards::last_ns() const {
  uint64_t last = 0;
  for (const Shard& s : shards_) last = std::max(last, s.last_ns);
  return last;
}

void LiveShards::clear() {
  for (Shard& s : shards_) {
    s.set.clear();
    s.last_ns = 0;
  }
  for (std::size_t i = 0; i <= hint_mask_; ++i) hints_[i].store(0, std::memory_order_relaxed);
}

}  // namespace gmt::interpose
