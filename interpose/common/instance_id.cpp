// SPDX-License-Identifier: Apache-2.0
#include "interpose/common/instance_id.h"

#include <atomic>

namespace gmt::interpose {

uint64_t new_instance_id() {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace gmt::interpose
