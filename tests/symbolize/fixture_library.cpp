// SPDX-License-Identifier: Apache-2.0
// The dlopen'ed library of the symbolizer fixture: one function of each kind the symbolizer must
// name. noipa keeps GCC from cloning them (scale.constprop.0) or folding them into callers, so
// the names are those in the source; the reporter must be a real call for its return address
// to point into the tested function.
#include "tests/symbolize/fixture_call_sites.h"

namespace {
gmt_fixture::CallSiteSink g_sink = nullptr;
}

// Passes on the address the caller will return to: an address inside the tested function.
extern "C" GMT_FIXTURE_KEPT void gmt_fixture_report_call_site(const char* name, int line) {
  g_sink(name, __builtin_return_address(0), line);
}

// A plain C function.
extern "C" GMT_FIXTURE_KEPT int gmt_fixture_plain(int value) {
  gmt_fixture_report_call_site("plain", __LINE__);
  return value + 1;
}

namespace gmt_fixture {

// A C++ function in a namespace, with arguments: its name must come back demangled.
GMT_FIXTURE_KEPT double scale(int value, double factor, const char* label) {
  gmt_fixture_report_call_site("namespaced", __LINE__);
  return value * factor + (label != nullptr ? 1 : 0);
}

}  // namespace gmt_fixture

// A function with internal linkage: only the .symtab (not .dynsym) and DWARF name it.
static GMT_FIXTURE_KEPT int static_function(int value) {
  gmt_fixture_report_call_site("static", __LINE__);
  return value * 3;
}

// Always inlined: its code sits in function_with_inline, and only DWARF's inline records tell
// that it ran there.
static inline __attribute__((always_inline)) int inlined_helper(int value) {
  gmt_fixture_report_call_site("inlined", __LINE__);
  return value * 5;
}

GMT_FIXTURE_KEPT int function_with_inline(int value) {
  g_sink("inline_call_site", nullptr, __LINE__ + 1);
  const int result = inlined_helper(value) + 1;
  return result;
}

// Inlined into one caller and kept out of line too (called through a pointer): a function that
// must read the same either way, or its sites would split.
static inline __attribute__((always_inline)) int inlined_and_not(int value, const char* site) {
  gmt_fixture_report_call_site(site, __LINE__);
  return value * 7;
}

GMT_FIXTURE_KEPT int calls_both_copies(int value) {
  int (*volatile out_of_line)(int, const char*) = &inlined_and_not;
  return inlined_and_not(value, "inlined_copy") + out_of_line(value, "out_of_line_copy");
}

extern "C" int gmt_fixture_library_run(gmt_fixture::CallSiteSink sink) {
  g_sink = sink;
  int total = gmt_fixture_plain(1);
  total += static_cast<int>(gmt_fixture::scale(2, 1.5, "x"));
  total += static_function(3);
  total += function_with_inline(4);
  total += calls_both_copies(5);
  // Entry points, for exact-PC lookups (the first frame of a stack).
  sink("plain_entry", reinterpret_cast<const void*>(&gmt_fixture_plain), 0);
  sink("namespaced_entry", reinterpret_cast<const void*>(&gmt_fixture::scale), 0);
  sink("static_entry", reinterpret_cast<const void*>(&static_function), 0);
  return total;
}
