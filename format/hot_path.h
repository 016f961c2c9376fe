// SPDX-License-Identifier: Apache-2.0
// Marks the functions that every traced event runs (a hook's record, its stack), so that the
// compiler puts them together, in .text.hot, apart from the rest of the library. Between two
// events the traced program's own work evicts our code from the core's caches and its page
// translations from the TLBs: scattered over the library, a block event's path with native stacks
// ran over 12 pages of code; gathered, over 3 (scripts/code-lines.sh).
#pragma once

#define GMT_HOT_PATH __attribute__((hot))
