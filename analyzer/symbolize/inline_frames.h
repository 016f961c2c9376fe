// SPDX-License-Identifier: Apache-2.0
// The inline chain at one address of a module: what ran there (an inlined callee, possibly
// several levels deep) and the function it was inlined into, each with its source location.
#pragma once

#include <elfutils/libdwfl.h>

#include <vector>

#include "analyzer/symbolize/function_index.h"
#include "analyzer/symbolize/symbol_table.h"
#include "analyzer/symbolize/symbolizer.h"
#include "analyzer/symbolize/unit_index.h"

namespace gmt::analyzer::symbolize {

// What a module builds once to answer lookups quickly.
struct ModuleIndexes {
  FunctionIndex functions;
  SymbolTable symbols;
  UnitIndex units;
};

// Innermost first: [inlined callee at the address's line..., function containing the call
// site], read from the DWARF scopes (DW_TAG_inlined_subroutine with DW_AT_call_file and
// DW_AT_call_line). Without DWARF, one frame named from the symbol table (ELF .symtab or
// .dynsym), with the line table's location if there is one. `function` is empty where nothing
// names the code; `module` is left for the caller. Never empty.
std::vector<SymbolizedFrame> inline_frames(Dwfl_Module* module, ModuleIndexes& indexes,
                                           Dwarf_Addr address);

}  // namespace gmt::analyzer::symbolize
