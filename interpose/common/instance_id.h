// SPDX-License-Identifier: Apache-2.0
// Numbers that no other call in the process returns, from 1. A thread_local cache shared by
// every instance of a class (a trace writer's chunk cursor, the high-water count's slot, the
// stack table's cache) remembers whose it is by such a number: the process has one instance of
// each, but tests make several, one after the other, maybe at the same address.
#pragma once

#include <cstdint>

namespace gmt::interpose {

uint64_t new_instance_id();

}  // namespace gmt::interpose
