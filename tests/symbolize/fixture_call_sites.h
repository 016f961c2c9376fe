// SPDX-License-Identifier: Apache-2.0
// What the symbolizer fixture program and its dlopen'ed library share: how they report the
// call sites the tests symbolize. Each tested function calls a reporter that passes on its own
// return address (an address inside the tested function, right after the call) and the
// __LINE__ of the call, so the expected line is exact whatever the compiler does.
#pragma once

// A tested function kept as written: not inlined, and for GCC not cloned (scale.constprop.0) nor
// folded into its callers (noipa). Clang, which has no noipa, clones no function here.
#if defined(__clang__)
#define GMT_FIXTURE_KEPT __attribute__((noinline))
#else
#define GMT_FIXTURE_KEPT __attribute__((noinline, noipa))
#endif

namespace gmt_fixture {

// `address` is a return address to symbolize with is_return_address = true, or an exact PC
// (a function's entry) when `line` is 0, or null when only `line` is passed on (a line the
// tests expect that no call reports by itself, such as where an inlined helper is called).
using CallSiteSink = void (*)(const char* name, const void* address, int line);

}  // namespace gmt_fixture

// Exported by the library: calls every tested function of the library, reporting to `sink`.
// Returns what they computed, so that none of the calls can be optimized away.
extern "C" int gmt_fixture_library_run(gmt_fixture::CallSiteSink sink);
