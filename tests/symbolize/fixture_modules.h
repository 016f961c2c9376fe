// SPDX-License-Identifier: Apache-2.0
// The modules of the running process, computed the way the traced process must record them for
// the symbolizer (see analyzer/symbolize/symbolizer.h, ModuleInfo).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gmt_fixture {

struct LoadedModule {
  std::string path;  // the main program's is "" in dl_iterate_phdr: /proc/self/exe is used
  uint64_t load_base = 0;
  uint64_t start = 0, end = 0;  // PT_LOAD extent at run time
  std::string build_id;         // lowercase hex, "" if none
};

std::vector<LoadedModule> loaded_modules();

}  // namespace gmt_fixture
