// SPDX-License-Identifier: Apache-2.0
// Marks the functions that every traced event runs (a hook's record, its stack), so that the
// compiler puts them together, in .text.hot, apart from the rest of the library. Between two
// events the traced program's own work evicts our code from the core's caches and its page
// translations from the TLBs: scattered over the library, an event's path spread over 13 pages
// of code and many half-used lines; gathered, it is fetched from fewer of both.
#pragma once

#define GMT_HOT_PATH __attribute__((hot))
