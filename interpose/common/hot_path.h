// SPDX-License-Identifier: Apache-2.0
// Marks the functions every allocation event runs. GCC places them together (.text.hot), so the
// code of an event lies on a few pages next to each other instead of spread across the library:
// between two allocations a framework's own work evicts the instruction caches and the TLB, and
// each page an event's code touched cost a miss.
#pragma once

#define GMT_HOT_PATH __attribute__((hot))
