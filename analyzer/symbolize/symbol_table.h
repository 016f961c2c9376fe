// SPDX-License-Identifier: Apache-2.0
// A module's ELF symbol table (.symtab, or .dynsym when stripped, or the MiniDebugInfo
// .gnu_debugdata one) sorted by address, for naming code that has no DWARF.
//
// dwfl_module_addrinfo scans every symbol on each call: tens of microseconds per address in a
// large library, milliseconds in one with a million symbols (libtorch_cuda), for each distinct
// address of each stack. Sorting once makes each lookup a binary search.
#pragma once

#include <elfutils/libdwfl.h>

#include <vector>

namespace gmt::analyzer::symbolize {

class SymbolTable {
 public:
  // Reads the symbols on first use, not here: modules with DWARF rarely need them.
  explicit SymbolTable(Dwfl_Module* module) : module_(module) {}

  // The mangled name of the function symbol whose extent holds `address`, or nullptr. A symbol
  // without size (hand-written assembly) extends to the next symbol.
  const char* name_at(Dwarf_Addr address);

 private:
  struct Symbol {
    Dwarf_Addr start, end;  // [start, end)
    const char* name;       // in the ELF string table, mapped as long as the Dwfl lives
  };

  void load();

  Dwfl_Module* module_;
  bool loaded_ = false;
  std::vector<Symbol> symbols_;      // sorted by start
  std::vector<Dwarf_Addr> max_end_;  // max_end_[i]: highest `end` among symbols_[0..i]
};

}  // namespace gmt::analyzer::symbolize
