// SPDX-License-Identifier: Apache-2.0
// What the operation-driven workloads (kind_ops, runtime_kind_ops) share: splitting an operation
// into its fields, reading numbers, dying with a message, and printing each call's result.
//
// Every call prints one line, `<operation as given> -> <return code>[ extra]`, so that a test can
// compare a traced run with an untraced one line by line. An operation prefixed with `try:` may
// fail; any other operation that fails ends the program with status 3.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace workload {

[[noreturn]] inline void die(const std::string& what) {
  std::fprintf(stderr, "workload: %s\n", what.c_str());
  std::fflush(nullptr);
  std::exit(3);
}

// One operation from the command line: "try:cuMemAlloc:a:1048576" -> may_fail, {"cuMemAlloc",
// "a", "1048576"}.
class Op {
 public:
  explicit Op(std::string text) : text_(std::move(text)) {
    std::string rest = text_;
    if (rest.rfind("try:", 0) == 0) {
      may_fail_ = true;
      rest = rest.substr(4);
    }
    std::size_t start = 0;
    for (std::size_t colon; (colon = rest.find(':', start)) != std::string::npos;
         start = colon + 1) {
      fields_.push_back(rest.substr(start, colon - start));
    }
    fields_.push_back(rest.substr(start));
  }

  const std::string& name() const { return fields_[0]; }
  const std::string& text() const { return text_; }
  bool may_fail() const { return may_fail_; }

  const std::string& str(std::size_t i) const {
    if (i >= fields_.size()) die("missing field " + std::to_string(i) + " in " + text_);
    return fields_[i];
  }
  unsigned long long num(std::size_t i) const { return std::stoull(str(i), nullptr, 0); }
  bool has(std::size_t i) const { return i < fields_.size(); }

  // Prints the result line; a failure of an operation not marked `try:` ends the program.
  void report(int code, const std::string& extra = "") const {
    std::printf("%s -> %d%s%s\n", text_.c_str(), code, extra.empty() ? "" : " ", extra.c_str());
    std::fflush(stdout);
    if (code != 0 && !may_fail_) die(text_ + " failed with " + std::to_string(code));
  }

 private:
  std::string text_;
  bool may_fail_ = false;
  std::vector<std::string> fields_;
};

}  // namespace workload
