// SPDX-License-Identifier: Apache-2.0
#include "interpose/output_path.h"

#include <sys/stat.h>

#include <cstdlib>

#include "interpose/config.h"

namespace gmt::interpose {

std::string file_pattern_of(std::string_view output) {
  std::string pattern(output);
  struct stat st {};
  const bool directory =
      !pattern.empty() &&
      (pattern.back() == '/' || (stat(pattern.c_str(), &st) == 0 && S_ISDIR(st.st_mode)));
  if (!directory) return pattern;
  if (pattern.back() != '/') pattern += '/';
  return pattern + kDefaultOutputPattern;
}

std::string expand_output_pattern(std::string_view pattern, const OutputPathVars& vars) {
  std::string out;
  out.reserve(pattern.size() + 16);
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    switch (const char c = pattern[++i]) {
      case 'p':
        out += std::to_string(vars.pid);
        break;
      case 'h':
        out += vars.host;
        break;
      case 'r':
        out += vars.rank;
        break;
      case '%':
        out += '%';
        break;
      default:
        out += '%';
        out += c;
    }
  }
  return out;
}

bool pattern_names_pid(std::string_view pattern) {
  for (std::size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    if (pattern[i + 1] == 'p') return true;
    ++i;  // %% and any other %x
  }
  return false;
}

std::string taken_name_candidate(std::string_view name, long pid, bool names_pid, int attempt) {
  constexpr std::string_view kExtension = ".gmt";
  const bool extension = name.size() > kExtension.size() && name.ends_with(kExtension);
  std::string out(extension ? name.substr(0, name.size() - kExtension.size()) : name);
  int counter = attempt;
  if (!names_pid) {
    out += "." + std::to_string(pid);
    --counter;
  }
  if (counter > 0) out += "." + std::to_string(counter);
  if (extension) out += kExtension;
  return out;
}

std::string rank_from_environment() {
  for (const char* name :
       {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') return value;
  }
  return "0";
}

}  // namespace gmt::interpose
