// SPDX-License-Identifier: Apache-2.0
#include "analyzer/symbolize/unit_index.h"

#include <elfutils/libdw.h>

#include <algorithm>

namespace gmt::analyzer::symbolize {

std::optional<UnitIndex::Found> UnitIndex::unit_at(Dwfl_Module* module, Dwarf_Addr address) {
  Dwarf_Addr bias = 0;
  if (Dwarf_Die* unit = dwfl_module_addrdie(module, address, &bias); unit != nullptr)
    return Found{*unit, bias};
  if (!built_) build(module);
  auto after = std::upper_bound(ranges_.begin(), ranges_.end(), address,
                                [](Dwarf_Addr a, const Range& r) { return a < r.low; });
  if (after == ranges_.begin()) return std::nullopt;
  const Range& r = *std::prev(after);
  if (address >= r.high) return std::nullopt;
  return Found{r.unit, r.bias};
}

void UnitIndex::build(Dwfl_Module* module) {
  built_ = true;
  Dwarf_Addr bias = 0;
  for (Dwarf_Die* unit = dwfl_module_nextcu(module, nullptr, &bias); unit != nullptr;
       unit = dwfl_module_nextcu(module, unit, &bias)) {
    Dwarf_Addr base = 0, low = 0, high = 0;
    for (ptrdiff_t offset = 0; (offset = dwarf_ranges(unit, offset, &base, &low, &high)) > 0;) {
      if (low < high) ranges_.push_back({low + bias, high + bias, *unit, bias});
    }
  }
  std::sort(ranges_.begin(), ranges_.end(),
            [](const Range& a, const Range& b) { return a.low < b.low; });
}

}  // namespace gmt::analyzer::symbolize
