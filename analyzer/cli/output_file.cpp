// SPDX-License-Identifier: Apache-2.0
#include "analyzer/cli/output_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace gmt::analyzer {

namespace {

bool same_file(const struct stat& a, const std::string& path) {
  struct stat b {};
  return stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

std::optional<std::string> input_at_output(const std::string& output,
                                           const std::vector<std::string>& inputs) {
  struct stat target {};
  if (output == "-" || stat(output.c_str(), &target) != 0 || S_ISDIR(target.st_mode)) {
    return std::nullopt;
  }
  for (const std::string& input : inputs) {
    if (same_file(target, input)) return input;
    std::error_code ec;
    if (!std::filesystem::is_directory(input, ec)) continue;
    // A directory's traces are read too: the output must not be one of them.
    for (const auto& entry : std::filesystem::directory_iterator(input, ec)) {
      if (same_file(target, entry.path().string())) return entry.path().string();
    }
  }
  return std::nullopt;
}

int refuse_output_over_input(const std::string& output, const std::vector<std::string>& inputs,
                             std::ostream& err) {
  const std::optional<std::string> input = input_at_output(output, inputs);
  if (!input) return 0;
  err << "gpumemtrace: the output " << output << " is the input " << *input
      << ": writing it would destroy what is read; choose another output file\n";
  return 2;
}

int write_output_file(const std::string& output, std::ostream& out, std::ostream& err,
                      const std::function<void(std::ostream&)>& write) {
  if (output == "-") {
    write(out);
    out.flush();
    return out ? 0 : 1;
  }
  std::ofstream file(output, std::ios::binary | std::ios::trunc);
  if (!file) {
    err << "gpumemtrace: cannot create " << output << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  write(file);
  file.close();
  if (!file) {
    err << "gpumemtrace: cannot write " << output << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  return 0;
}

}  // namespace gmt::analyzer
