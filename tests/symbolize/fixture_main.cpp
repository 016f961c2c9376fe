// SPDX-License-Identifier: Apache-2.0
// The symbolizer fixture program: runs a function of its own and the tested functions of the
// library named by argv[1] (dlopen'ed), then prints what the tests need, one record a line:
//   site <name> <address hex> <line>
//   module <load base hex> <start hex> <end hex> <build-id or -> <path to end of line>
#include <dlfcn.h>

#include <cinttypes>
#include <cstdio>

#include "tests/symbolize/fixture_call_sites.h"
#include "tests/symbolize/fixture_modules.h"

namespace {

void print_site(const char* name, const void* address, int line) {
  std::printf("site %s %" PRIxPTR " %d\n", name, reinterpret_cast<uintptr_t>(address), line);
}

GMT_FIXTURE_KEPT void report_call_site(const char* name, int line) {
  print_site(name, __builtin_return_address(0), line);
}

}  // namespace

// A function of the main executable (not of a shared library).
GMT_FIXTURE_KEPT int main_program_function(int value) {
  report_call_site("main_program", __LINE__);
  return value - 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s LIBRARY\n", argv[0]);
    return 2;
  }
  int total = main_program_function(1);
  void* library = dlopen(argv[1], RTLD_NOW);
  if (library == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  auto run = reinterpret_cast<decltype(&gmt_fixture_library_run)>(
      dlsym(library, "gmt_fixture_library_run"));
  if (run == nullptr) {
    std::fprintf(stderr, "dlsym: %s\n", dlerror());
    return 1;
  }
  total += run(print_site);
  for (const gmt_fixture::LoadedModule& module : gmt_fixture::loaded_modules()) {
    std::printf("module %" PRIx64 " %" PRIx64 " %" PRIx64 " %s %s\n", module.load_base,
                module.start, module.end, module.build_id.empty() ? "-" : module.build_id.c_str(),
                module.path.c_str());
  }
  // The library stays loaded until exit, so the modules printed are those the sites ran in.
  return total > 0 ? 0 : 1;
}
