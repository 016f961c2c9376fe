// SPDX-License-Identifier: Apache-2.0
#include "analyzer/run/traced_processes.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "format/trace_file_name.h"

namespace gmt::analyzer {

namespace fs = std::filesystem;

std::optional<std::string> trace_of_pid(int pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(proc + "/fd", ec)) {
    const fs::path target = fs::read_symlink(entry.path(), ec);
    if (!ec && format::trace_file_name(target.filename().string())) return target.string();
  }
  std::ifstream maps(proc + "/maps");
  for (std::string line; std::getline(maps, line);) {
    const std::size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (path.size() > 10 && path.ends_with(" (deleted)")) continue;
    if (format::trace_file_name(fs::path(path).filename().string())) return path;
  }
  return std::nullopt;
}

bool process_gone(uint64_t pid) {
  if (pid == 0 || pid > INT32_MAX) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  const std::size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

}  // namespace gmt::analyzer
