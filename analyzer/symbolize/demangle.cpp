// SPDX-License-Identifier: Apache-2.0
#include "analyzer/symbolize/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace gmt::analyzer::symbolize {

std::string demangle(const char* name) {
  if (name == nullptr) return {};
  // Only Itanium-mangled names start with _Z; skipping the rest avoids the demangler
  // interpreting a C name as a mangled type name (it would turn "i" into "int").
  if (name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
  if (status != 0 || demangled == nullptr) return name;
  return demangled.get();
}

}  // namespace gmt::analyzer::symbolize
