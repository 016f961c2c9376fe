// SPDX-License-Identifier: Apache-2.0
#include "analyzer/symbolize/inline_frames.h"

#include <dwarf.h>
#include <elfutils/libdw.h>

#include <climits>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "analyzer/symbolize/demangle.h"

namespace gmt::analyzer::symbolize {
namespace {

struct SourceLocation {
  std::optional<std::string> file;
  std::optional<int> line;
};

std::optional<int> positive_line(Dwarf_Word line) {
  // Line 0 is DWARF's "no source line" (code the compiler could not attribute).
  if (line == 0 || line > static_cast<Dwarf_Word>(INT_MAX)) return std::nullopt;
  return static_cast<int>(line);
}

// Where the instruction at `address` comes from, per the line table: for inlined code, the
// line inside the inlined callee.
SourceLocation line_table_location(Dwfl_Module* module, UnitIndex& units, Dwarf_Addr address) {
  SourceLocation location;
  std::optional<UnitIndex::Found> unit = units.unit_at(module, address);
  // The line table's closest row below an address past the unit's code (between two of its
  // ranges: main and main.cold with _start between them) is the end of the code before it,
  // whose file and line belong to no instruction there (_start read "stl_vector.h:733"). The
  // address must be in the unit's ranges, where it has any.
  if (unit &&
      (dwarf_hasattr(&unit->unit, DW_AT_ranges) != 0 ||
       dwarf_hasattr(&unit->unit, DW_AT_low_pc) != 0) &&
      dwarf_haspc(&unit->unit, address - unit->bias) == 0) {
    return location;
  }
  const char* file = nullptr;
  int number = 0;
  if (Dwfl_Line* line = dwfl_module_getsrc(module, address); line != nullptr) {
    file = dwfl_lineinfo(line, nullptr, &number, nullptr, nullptr, nullptr);
  } else if (unit) {
    // A unit libdwfl does not find (unit_index.h): its own line table.
    if (Dwarf_Line* row = dwarf_getsrc_die(&unit->unit, address - unit->bias); row != nullptr) {
      file = dwarf_linesrc(row, nullptr, nullptr);
      if (dwarf_lineno(row, &number) != 0) number = 0;
    }
  }
  if (file != nullptr && file[0] != '\0') location.file = file;
  if (number > 0) location.line = number;
  return location;
}

// Where an inlined instance was called from: its DW_AT_call_file / DW_AT_call_line, the file
// being an index into the line table of the unit holding the instance.
SourceLocation call_site(Dwarf_Die* inlined) {
  SourceLocation location;
  Dwarf_Attribute attribute;
  Dwarf_Word value = 0;
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attribute), &value) == 0) {
    location.line = positive_line(value);
  }
  Dwarf_Die unit;
  Dwarf_Files* files = nullptr;
  size_t file_count = 0;
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attribute), &value) == 0 &&
      dwarf_diecu(inlined, &unit, nullptr, nullptr) != nullptr &&
      dwarf_getsrcfiles(&unit, &files, &file_count) == 0 && value < file_count) {
    const char* file = dwarf_filesrc(files, value, nullptr, nullptr);
    if (file != nullptr && file[0] != '\0') location.file = file;
  }
  return location;
}

// The C++ mangled name of a function DIE, following DW_AT_abstract_origin (inlined and
// out-of-line instances) and DW_AT_specification (member functions) to where it is written.
// A linkage name that is not mangled is an assembler label (glibc's __GI___libc_malloc for
// malloc): the source name or the public symbol reads better, so it is not used.
const char* mangled_name(Dwarf_Die* function) {
  Dwarf_Attribute attribute;
  const char* name =
      dwarf_formstring(dwarf_attr_integrate(function, DW_AT_linkage_name, &attribute));
  if (name == nullptr) {
    name = dwarf_formstring(dwarf_attr_integrate(function, DW_AT_MIPS_linkage_name, &attribute));
  }
  return name != nullptr && name[0] == '_' && name[1] == 'Z' ? name : nullptr;
}

// "name [clone .constprop.0]" and "name.cold" are parts or copies of `name`: one function.
std::string without_clone_suffix(std::string name, bool mangled) {
  if (mangled) {
    while (name.ends_with("]")) {
      const std::size_t clone = name.rfind(" [clone ");
      if (clone == std::string::npos) break;
      name.erase(clone);
    }
    return name;
  }
  for (const char* suffix : {".cold", ".part.", ".constprop.", ".isra.", ".lto_priv."}) {
    const std::size_t at = name.find(suffix);
    if (at != std::string::npos && at > 0) name.erase(at);
  }
  return name;
}

// The symbol table's name for the function at `address`: demangled, clone suffixes cut.
std::string symbol_name(SymbolTable& symbols, Dwarf_Addr address) {
  const char* name = symbols.name_at(address);
  if (name == nullptr) return {};
  return without_clone_suffix(demangle(name), name[0] == '_' && name[1] == 'Z');
}

// The DIE where a function is declared: an inlined or out-of-line instance points to its
// abstract definition (DW_AT_abstract_origin), a member function's definition to its
// declaration in the class (DW_AT_specification). The hop limit guards against cycles in
// corrupt DWARF.
Dwarf_Die declaration_of(Dwarf_Die* function) {
  Dwarf_Die current = *function;
  for (int hop = 0; hop < 8; ++hop) {
    Dwarf_Attribute attribute;
    Dwarf_Attribute* reference = dwarf_attr(&current, DW_AT_abstract_origin, &attribute);
    if (reference == nullptr) reference = dwarf_attr(&current, DW_AT_specification, &attribute);
    Dwarf_Die next;
    if (reference == nullptr || dwarf_formref_die(reference, &next) == nullptr) break;
    current = next;
  }
  return current;
}

// DW_AT_name qualified with the namespaces and classes around the declaration, as the
// demangler writes them. No parameter list: DWARF has the types, but not in a form worth
// re-printing as C++.
std::string qualified_name(Dwarf_Die* function, FunctionIndex& index) {
  const char* name = dwarf_diename(function);
  if (name == nullptr) return {};
  Dwarf_Die declaration = declaration_of(function);
  return index.scope_of(&declaration) + name;
}

// A DWARF function's name, demangled: from its mangled name when there is one. GCC writes none
// for C functions, main, extern "C" and functions with internal linkage; then the symbol table
// names the function, as it would without debug info ("static_function(int)"): for the
// outermost function, at the address; for an inlined one, at its out-of-line copy, so that a
// function inlined at one call and not at another has one name (and its sites are one site).
// An inlined function without a copy of its own is named by its qualified DW_AT_name
// ("inlined_helper"). Clone suffixes (".cold", "[clone .constprop.0]") are cut: the same function.
std::string function_name(Dwarf_Die* function, ModuleIndexes& indexes, Dwarf_Addr address,
                          Dwarf_Addr bias, bool outermost) {
  if (const char* mangled = mangled_name(function)) return demangle(mangled);
  if (outermost) {
    std::string from_symbols = symbol_name(indexes.symbols, address);
    if (!from_symbols.empty()) return from_symbols;
  } else {
    Dwarf_Attribute attribute;
    Dwarf_Die origin;
    if (dwarf_formref_die(dwarf_attr(function, DW_AT_abstract_origin, &attribute), &origin) !=
        nullptr) {
      if (const std::optional<Dwarf_Addr> entry = indexes.functions.out_of_line_entry(&origin)) {
        std::string from_symbols = symbol_name(indexes.symbols, *entry + bias);
        if (!from_symbols.empty()) return from_symbols;
      }
    }
  }
  return qualified_name(function, indexes.functions);
}

// Scopes inside a function that can hold the code at an address.
bool may_contain_code(int tag) {
  return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
         tag == DW_TAG_try_block || tag == DW_TAG_catch_block || tag == DW_TAG_with_stmt ||
         tag == DW_TAG_entry_point || tag == DW_TAG_subprogram;
}

// The function containing `address` and the inlined instances nested in it down to the
// innermost one holding the address: [function, outer inlined..., innermost inlined].
std::vector<Dwarf_Die> physical_chain(Dwfl_Module* module, ModuleIndexes& indexes,
                                      Dwarf_Addr address, Dwarf_Addr& bias) {
  std::vector<Dwarf_Die> chain;
  std::optional<UnitIndex::Found> unit = indexes.units.unit_at(module, address);
  if (!unit) return chain;
  bias = unit->bias;
  const Dwarf_Addr unit_address = address - bias;
  std::optional<Dwarf_Die> function = indexes.functions.function_at(&unit->unit, unit_address);
  if (!function) return chain;
  chain.push_back(*function);
  Dwarf_Die scope = *function;
  // Bounded: corrupt DWARF could nest without end.
  for (int depth = 0; depth < 256; ++depth) {
    Dwarf_Die child;
    bool entered = false;
    if (dwarf_child(&scope, &child) == 0) {
      do {
        if (may_contain_code(dwarf_tag(&child)) && dwarf_haspc(&child, unit_address) == 1) {
          entered = true;
          break;
        }
      } while (dwarf_siblingof(&child, &child) == 0);
    }
    if (!entered) break;
    scope = child;
    const int tag = dwarf_tag(&scope);
    if (tag == DW_TAG_inlined_subroutine) chain.push_back(scope);
    // A function nested in a function (GNU C) is where the code really is.
    if (tag == DW_TAG_subprogram || tag == DW_TAG_entry_point) chain.assign(1, scope);
  }
  return chain;
}

}  // namespace

std::vector<SymbolizedFrame> inline_frames(Dwfl_Module* module, ModuleIndexes& indexes,
                                           Dwarf_Addr address) {
  std::vector<SymbolizedFrame> frames;
  SourceLocation location = line_table_location(module, indexes.units, address);

  Dwarf_Addr bias = 0;  // module address - unit address
  std::vector<Dwarf_Die> chain = physical_chain(module, indexes, address, bias);
  for (size_t i = chain.size(); i-- > 0;) {
    Dwarf_Die* scope = &chain[i];
    const bool inlined = i > 0;
    SymbolizedFrame frame;
    frame.function = function_name(scope, indexes, address, bias, !inlined);
    frame.file = location.file;
    frame.line = location.line;
    frame.inlined = inlined;
    frames.push_back(std::move(frame));
    // The next frame out is where this instance was inlined.
    if (inlined) location = call_site(scope);
  }

  if (frames.empty()) {
    // No DWARF function encloses the address (no debug info, or a unit without it): the symbol
    // table names the function.
    SymbolizedFrame frame;
    frame.function = symbol_name(indexes.symbols, address);
    frame.file = location.file;
    frame.line = location.line;
    frames.push_back(std::move(frame));
  }
  return frames;
}

}  // namespace gmt::analyzer::symbolize
