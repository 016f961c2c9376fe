// SPDX-License-Identifier: Apache-2.0
#include "analyzer/run/preload_library.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace gmt::analyzer {
namespace {

// Why `path` cannot be preloaded, or "" when it looks like a shared library. It is not opened
// with dlopen: its constructors would run in this process.
std::string unloadable(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) return "does not exist";
  if (!std::filesystem::is_regular_file(status)) return "is not a file";
  if (access(path.c_str(), R_OK) != 0) return "cannot be read: " + std::string(strerror(errno));
  std::ifstream file(path, std::ios::binary);
  char magic[4] = {};
  if (!file.read(magic, sizeof magic) || std::memcmp(magic,
                                                     "\x7f"
                                                     "ELF",
                                                     4) != 0) {
    return "is not a shared library (not an ELF file)";
  }
  return "";
}

}  // namespace

PreloadLibrary find_preload_library() {
  namespace fs = std::filesystem;
  if (const char* explicit_path = std::getenv("GPUMEMTRACE_LIBRARY");
      explicit_path && *explicit_path) {
    const std::string why = unloadable(explicit_path);
    if (!why.empty()) {
      return {std::nullopt,
              "GPUMEMTRACE_LIBRARY names " + std::string(explicit_path) + ", which " + why};
    }
    return {fs::absolute(explicit_path).string(), ""};
  }
  const std::string not_found =
      "cannot find libgpumemtrace.so next to this executable or in ../lib; set "
      "GPUMEMTRACE_LIBRARY to its path";
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {std::nullopt, not_found};
  const fs::path dir = exe.parent_path();
  for (const fs::path& candidate : {dir / "libgpumemtrace.so", dir / "../lib/libgpumemtrace.so",
                                    dir / "../lib/gpumemtrace/libgpumemtrace.so"}) {
    if (fs::exists(candidate, ec)) return {fs::weakly_canonical(candidate, ec).string(), ""};
  }
  return {std::nullopt, not_found};
}

}  // namespace gmt::analyzer
