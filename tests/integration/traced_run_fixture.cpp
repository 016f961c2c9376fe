// SPDX-License-Identifier: Apache-2.0
#include "tests/integration/traced_run_fixture.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace fs = std::filesystem;
using nlohmann::json;

namespace gmt::test {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string mib(uint64_t n) {
  return std::to_string(n * kMiB);
}

void TracedRun::SetUp() {
  char name[] = "/tmp/gmt-e2e-XXXXXX";
  ASSERT_NE(mkdtemp(name), nullptr);
  dir_ = name;
}

void TracedRun::TearDown() {
  fs::remove_all(dir_);
}

std::string TracedRun::workload(const std::string& name) const {
  return std::string(GMT_WORKLOAD_DIR) + "/" + name;
}

std::map<std::string, std::string> TracedRun::base_env() const {
  std::map<std::string, std::string> env = {
      {"LD_LIBRARY_PATH", GMT_FAKECUDA_LIB_DIR},
      {"GPUMEMTRACE_OUTPUT", dir_ + "/trace.%p.gmt"},
      {"FAKECUDA_DEVICE_MEMORY", std::to_string(16 * 1024 * kMiB)},
      {"FAKECUDA_CONTEXT_OVERHEAD", mib(300)},
  };
  // Leak checking belongs to the tests of our own code, not to programs killed on purpose.
  if (!sanitizer_runtime().empty()) env["ASAN_OPTIONS"] = "detect_leaks=0";
  return env;
}

std::string TracedRun::sanitizer_runtime() {
  return GMT_ASAN_RUNTIME;
}

std::string TracedRun::preload() const {
  const std::string asan = sanitizer_runtime();
  return asan.empty() ? GMT_PRELOAD : asan + ":" + GMT_PRELOAD;
}

ProcessResult TracedRun::run_workload(const std::string& name, const std::vector<std::string>& ops,
                                      const std::map<std::string, std::string>& extra_env,
                                      bool traced) const {
  ProcessSpec spec;
  spec.argv = {workload(name)};
  spec.argv.insert(spec.argv.end(), ops.begin(), ops.end());
  spec.set_env = base_env();
  if (traced) {
    spec.set_env["LD_PRELOAD"] = preload();
  } else if (!sanitizer_runtime().empty()) {
    spec.set_env["LD_PRELOAD"] = sanitizer_runtime();
  } else {
    spec.unset_env = {"LD_PRELOAD"};
  }
  for (const auto& [k, v] : extra_env) spec.set_env[k] = v;
  spec.cwd = dir_;
  return run_process(spec);
}

ProcessResult TracedRun::run_traced(const std::string& name, std::vector<std::string> ops,
                                    std::map<std::string, std::string> extra_env) const {
  return run_workload(name, ops, extra_env, true);
}

ProcessResult TracedRun::run_untraced(const std::string& name, std::vector<std::string> ops,
                                      std::map<std::string, std::string> extra_env) const {
  return run_workload(name, ops, extra_env, false);
}

json TracedRun::traced_report(const std::string& name, std::vector<std::string> ops,
                              std::map<std::string, std::string> extra_env) {
  const ProcessResult r = run_traced(name, ops, extra_env);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  last_output_ = r.out;
  const auto found = traces();
  if (found.size() != 1) {
    ADD_FAILURE() << found.size() << " traces instead of one";
    return json::object();
  }
  return report(found);
}

std::string TracedRun::traced_run(const std::string& name, std::vector<std::string> ops,
                                  std::map<std::string, std::string> extra_env) const {
  const std::vector<std::string> before = traces();
  const ProcessResult r = run_traced(name, std::move(ops), std::move(extra_env));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const std::string& t : traces()) {
    if (!std::binary_search(before.begin(), before.end(), t)) return t;
  }
  ADD_FAILURE() << name << " left no new trace in " << dir_;
  return {};
}

std::vector<std::string> TracedRun::traces() const {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    if (entry.path().extension() == ".gmt") found.push_back(entry.path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::string TracedRun::only_trace() const {
  const auto found = traces();
  EXPECT_EQ(found.size(), 1u);
  return found.empty() ? std::string() : found.front();
}

ProcessResult TracedRun::cli(std::vector<std::string> args,
                             std::map<std::string, std::string> env) const {
  ProcessSpec spec;
  spec.argv = {GMT_CLI};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.set_env = env;
  if (!sanitizer_runtime().empty()) spec.set_env["ASAN_OPTIONS"] = "detect_leaks=0";
  spec.unset_env = {"LD_PRELOAD"};
  spec.cwd = dir_;
  return run_process(spec);
}

json TracedRun::report(const std::vector<std::string>& paths) const {
  std::vector<std::string> args = {"report", "--json"};
  args.insert(args.end(), paths.begin(), paths.end());
  const ProcessResult r = cli(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

namespace {

// report["devices"], or an empty list when the report has none (a const json has no default).
const json& devices_of(const json& report) {
  static const json none = json::array();
  return report.is_object() && report.contains("devices") ? report["devices"] : none;
}

}  // namespace

const json& TracedRun::device(const json& report, int ordinal) {
  for (const auto& d : devices_of(report)) {
    if (d["device"] == ordinal) return d;
  }
  ADD_FAILURE() << "no device " << ordinal << " in " << report.dump();
  static const json empty;
  return empty;
}

const json& TracedRun::device(const json& report, int trace, int ordinal) {
  for (const auto& d : devices_of(report)) {
    if (d["trace"] == trace && d["device"] == ordinal) return d;
  }
  ADD_FAILURE() << "no device " << ordinal << " of trace " << trace << " in " << report.dump();
  static const json empty;
  return empty;
}

int64_t number(const json& object, std::string_view dotted_path) {
  const json* at = &object;
  std::size_t start = 0;
  while (start <= dotted_path.size()) {
    const std::size_t dot = std::min(dotted_path.find('.', start), dotted_path.size());
    const std::string key(dotted_path.substr(start, dot - start));
    const bool index = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
    if (index && at->is_array() && std::stoul(key) < at->size()) {
      at = &(*at)[std::stoul(key)];
    } else if (at->is_object() && at->contains(key)) {
      at = &(*at)[key];
    } else {
      ADD_FAILURE() << "no " << dotted_path << " (missing \"" << key << "\") in " << object.dump();
      return -1;
    }
    start = dot + 1;
  }
  if (!at->is_number_integer()) {
    ADD_FAILURE() << dotted_path << " is not an integer in " << object.dump();
    return -1;
  }
  return at->get<int64_t>();
}

std::vector<std::string> kinds(const json& device) {
  std::vector<std::string> names;
  if (!device.is_object() || !device.contains("by_kind") || !device["by_kind"].is_object()) {
    ADD_FAILURE() << "no by_kind object in " << device.dump();
    return names;
  }
  for (const auto& [name, value] : device["by_kind"].items()) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

int64_t printed(const std::string& output, const std::string& key) {
  const std::string needle = key + "=";
  std::size_t at = output.find(needle);
  // Only a whole key: "pitch=" must not match "xpitch=".
  while (at != std::string::npos && at > 0 && output[at - 1] != ' ' && output[at - 1] != '\n') {
    at = output.find(needle, at + 1);
  }
  if (at == std::string::npos) {
    ADD_FAILURE() << "the workload printed no " << needle << " in:\n" << output;
    return -1;
  }
  return std::stoll(output.substr(at + needle.size()));
}

}  // namespace gmt::test
