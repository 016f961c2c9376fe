// SPDX-License-Identifier: Apache-2.0
#include "analyzer/symbolize/function_index.h"

#include <dwarf.h>

#include <algorithm>

namespace gmt::analyzer::symbolize {
namespace {

// Deeper nesting of namespaces and classes than this only happens in corrupt DWARF, which
// must not exhaust the stack.
constexpr int kMaxScopeDepth = 64;

}  // namespace

FunctionIndex::Unit& FunctionIndex::unit_index(Dwarf_Die* unit) {
  auto found = units_.find(unit->addr);
  if (found != units_.end()) return found->second;
  Unit& index = units_[unit->addr];
  index_children(unit, std::string(), 0, index);
  std::sort(index.ranges.begin(), index.ranges.end(),
            [](const Range& a, const Range& b) { return a.low < b.low; });
  index.max_high.reserve(index.ranges.size());
  Dwarf_Addr highest = 0;
  for (const Range& range : index.ranges) {
    highest = std::max(highest, range.high);
    index.max_high.push_back(highest);
  }
  return index;
}

void FunctionIndex::index_children(Dwarf_Die* parent, const std::string& scope, int depth,
                                   Unit& index) {
  if (depth > kMaxScopeDepth) return;
  Dwarf_Die child;
  if (dwarf_child(parent, &child) != 0) return;
  do {
    const int tag = dwarf_tag(&child);
    if (tag == DW_TAG_subprogram) {
      if (!scope.empty()) scopes_.emplace(child.addr, scope);
      // Every range (hot and .cold parts) of a function with code. Functions are not entered:
      // what they hold (parameters, blocks, inlined instances) is read per address.
      Dwarf_Addr base = 0, low = 0, high = 0;
      ptrdiff_t offset = 0;
      while ((offset = dwarf_ranges(&child, offset, &base, &low, &high)) > 0) {
        if (low < high) index.ranges.push_back({low, high, child});
      }
      // A concrete copy of a function also inlined elsewhere points to its abstract instance.
      Dwarf_Attribute attribute;
      Dwarf_Die origin;
      Dwarf_Addr entry = 0;
      if (dwarf_formref_die(dwarf_attr(&child, DW_AT_abstract_origin, &attribute), &origin) !=
              nullptr &&
          dwarf_entrypc(&child, &entry) == 0) {
        out_of_line_.emplace(origin.addr, entry);
      }
    } else if (tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
               tag == DW_TAG_structure_type || tag == DW_TAG_union_type) {
      // Written as the demangler writes them, so DWARF and symbol names read alike.
      const char* name = dwarf_diename(&child);
      const std::string inner = scope +
                                (name != nullptr           ? name
                                 : tag == DW_TAG_namespace ? "(anonymous namespace)"
                                                           : "(anonymous)") +
                                "::";
      index_children(&child, inner, depth + 1, index);
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

std::optional<Dwarf_Die> FunctionIndex::function_at(Dwarf_Die* unit, Dwarf_Addr address) {
  const Unit& index = unit_index(unit);
  // The last range starting at or before the address; earlier ones may still reach past it
  // (nested functions), which max_high tells without scanning the whole unit.
  auto it = std::upper_bound(index.ranges.begin(), index.ranges.end(), address,
                             [](Dwarf_Addr a, const Range& range) { return a < range.low; });
  for (size_t i = static_cast<size_t>(it - index.ranges.begin()); i-- > 0;) {
    if (index.max_high[i] <= address) break;
    if (address < index.ranges[i].high) return index.ranges[i].function;
  }
  return std::nullopt;
}

const std::string& FunctionIndex::scope_of(Dwarf_Die* declaration) {
  static const std::string kNone;
  Dwarf_Die unit;
  if (dwarf_diecu(declaration, &unit, nullptr, nullptr) == nullptr) return kNone;
  unit_index(&unit);
  auto found = scopes_.find(declaration->addr);
  return found != scopes_.end() ? found->second : kNone;
}

std::optional<Dwarf_Addr> FunctionIndex::out_of_line_entry(Dwarf_Die* origin) {
  Dwarf_Die unit;
  if (dwarf_diecu(origin, &unit, nullptr, nullptr) == nullptr) return std::nullopt;
  unit_index(&unit);
  auto found = out_of_line_.find(origin->addr);
  if (found == out_of_line_.end()) return std::nullopt;
  return found->second;
}

}  // namespace gmt::analyzer::symbolize
