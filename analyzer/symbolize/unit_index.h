// SPDX-License-Identifier: Apache-2.0
// Which compilation unit of a module holds an address, where libdwfl cannot tell.
//
// libdwfl finds a unit through .debug_aranges; the libdw of Debian 12 (0.188) finds nothing in
// a module without that section, and clang writes none unless asked (-gdwarf-aranges): every
// address of a clang-built library then had no unit, so no file, line or inlined frame. Where
// dwfl_module_addrdie finds nothing, the module's units' own ranges (DW_AT_low_pc/high_pc,
// DW_AT_ranges), read once, answer instead.
#pragma once

#include <elfutils/libdwfl.h>

#include <optional>
#include <vector>

namespace gmt::analyzer::symbolize {

class UnitIndex {
 public:
  struct Found {
    Dwarf_Die unit;
    Dwarf_Addr bias;  // module address - unit address
  };

  // The unit whose code holds `address` (a module address).
  std::optional<Found> unit_at(Dwfl_Module* module, Dwarf_Addr address);

 private:
  struct Range {
    Dwarf_Addr low, high;  // [low, high), module addresses
    Dwarf_Die unit;
    Dwarf_Addr bias;
  };

  void build(Dwfl_Module* module);

  bool built_ = false;
  std::vector<Range> ranges_;  // sorted by low; units do not overlap
};

}  // namespace gmt::analyzer::symbolize
