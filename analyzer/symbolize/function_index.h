// SPDX-License-Identifier: Apache-2.0
// Which function of a compilation unit contains an address, and which namespaces and classes
// a function is declared in, indexed once per unit.
//
// libdw's dwarf_getscopes / dwarf_getscopes_die walk the unit's DIE tree from its start on
// every call: about a millisecond per address in a C++ unit that includes the standard
// library, and a large program's stacks hold tens of thousands of distinct addresses. One walk
// per unit, then a binary search, makes an address cost microseconds.
#pragma once

#include <elfutils/libdw.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace gmt::analyzer::symbolize {

class FunctionIndex {
 public:
  // The concrete function (DW_TAG_subprogram with code) of `unit` whose ranges contain
  // `address` (in the unit's address space); the innermost one if functions nest.
  std::optional<Dwarf_Die> function_at(Dwarf_Die* unit, Dwarf_Addr address);

  // "ns::Class::" for a function declared in namespaces or classes, "" for one at the top level
  // or one not found (the declaration's unit is indexed first if needed).
  const std::string& scope_of(Dwarf_Die* declaration);

  // The entry (in the unit's address space) of an out-of-line copy of the function whose
  // abstract instance is `origin` (what DW_AT_abstract_origin of its inlined instances names),
  // if its unit has one.
  std::optional<Dwarf_Addr> out_of_line_entry(Dwarf_Die* origin);

 private:
  struct Range {
    Dwarf_Addr low, high;  // [low, high)
    Dwarf_Die function;
  };
  struct Unit {
    std::vector<Range> ranges;         // sorted by low
    std::vector<Dwarf_Addr> max_high;  // max_high[i]: highest `high` among ranges[0..i]
  };

  Unit& unit_index(Dwarf_Die* unit);
  void index_children(Dwarf_Die* parent, const std::string& scope, int depth, Unit& index);

  // DIEs are keyed by their address in the mapped debug data: unique across the main debug
  // file, a dwz alternate file, and every unit.
  std::unordered_map<const void*, Unit> units_;
  std::unordered_map<const void*, std::string> scopes_;
  std::unordered_map<const void*, Dwarf_Addr> out_of_line_;  // by abstract instance DIE
};

}  // namespace gmt::analyzer::symbolize
