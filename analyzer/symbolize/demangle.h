// SPDX-License-Identifier: Apache-2.0
// C++ symbol demangling, shared by the DWARF and symbol-table paths so that a function reads
// the same whether or not its module has debug info.
#pragma once

#include <string>

namespace gmt::analyzer::symbolize {

// "_ZN3foo3barEi" -> "foo::bar(int)"; names that are not mangled C++ (C functions, "main")
// or that the demangler rejects are returned unchanged.
std::string demangle(const char* name);

}  // namespace gmt::analyzer::symbolize
