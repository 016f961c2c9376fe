// SPDX-License-Identifier: Apache-2.0
#include "interpose/record/live_size_table.h"

namespace gmt::interpose {

// DeviceHighWater's table, compiled once here rather than in every user.
template class LiveTable<LiveSizeEntry>;

}  // namespace gmt::interpose
