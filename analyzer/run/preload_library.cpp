// SPDX-License-Identifier: Apache-2.0
#include "analyzer/run/preload_library.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace gmt::analyzer {

std::optional<std::string> find_preload_library() {
  namespace fs = std::filesystem;
  if (const char* explicit_path = std::getenv("GPUMEMTRACE_LIBRARY");
      explicit_path && *explicit_path) {
    return fs::exists(explicit_path)
               ? std::optional<std::string>(fs::absolute(explicit_path).string())
               : std::nullopt;
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  const fs::path dir = exe.parent_path();
  for (const fs::path& candidate : {dir / "libgpumemtrace.so", dir / "../lib/libgpumemtrace.so",
                                    dir / "../lib/gpumemtrace/libgpumemtrace.so"}) {
    if (fs::exists(candidate, ec)) return fs::weakly_canonical(candidate, ec).string();
  }
  return std::nullopt;
}

}  // namespace gmt::analyzer
