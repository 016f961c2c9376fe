// SPDX-License-Identifier: Apache-2.0
#include "interpose/record/live_shards.h"

#include <algorithm>

namespace gmt::interpose {

void LiveShards::lock_all() {
  for (Shard& s : shards_) s.mutex.lock();
}

void LiveShards::unlock_all() {
  for (auto s = shards_.rbegin(); s != shards_.rend(); ++s) s->mutex.unlock();
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
}

}  // namespace gmt::interpose
