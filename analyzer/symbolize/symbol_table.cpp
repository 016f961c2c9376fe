// SPDX-License-Identifier: Apache-2.0
#include "analyzer/symbolize/symbol_table.h"

#include <gelf.h>

#include <algorithm>
#include <cstring>

namespace gmt::analyzer::symbolize {
namespace {

// Among symbols at the same address (aliases), the one a person would name the code by:
// a sized one over a label, global over weak over local; then (better_alias) the public name
// over internal ones: malloc rather than __libc_malloc or __GI___libc_malloc.
int preference(const GElf_Sym& symbol) {
  int score = symbol.st_size > 0 ? 8 : 0;
  switch (GELF_ST_BIND(symbol.st_info)) {
    case STB_GLOBAL:
      score += 2;
      break;
    case STB_WEAK:
      score += 1;
      break;
    default:
      break;
  }
  return score;
}

// Code symbols only: functions, and untyped symbols in executable sections (assembly without
// .type). Data, sections, files and undefined imports never name an instruction.
bool names_code(const GElf_Sym& symbol, GElf_Word section_index, Elf* elf) {
  if (section_index == SHN_UNDEF || section_index == SHN_ABS) return false;
  const int type = GELF_ST_TYPE(symbol.st_info);
  if (type == STT_FUNC || type == STT_GNU_IFUNC) return true;
  if (type != STT_NOTYPE || elf == nullptr) return false;
  GElf_Shdr header;
  Elf_Scn* section = elf_getscn(elf, section_index);
  return section != nullptr && gelf_getshdr(section, &header) != nullptr &&
         (header.sh_flags & SHF_EXECINSTR) != 0;
}

size_t leading_underscores(const char* name) {
  size_t count = 0;
  while (name[count] == '_') ++count;
  return count;
}

struct Candidate {
  Dwarf_Addr start;
  GElf_Xword size;
  int preference;
  const char* name;
};

// Orders by address, and at one address the alias to keep first. Deterministic whatever the
// order of the symbol table.
bool before(const Candidate& a, const Candidate& b) {
  if (a.start != b.start) return a.start < b.start;
  if (a.preference != b.preference) return a.preference > b.preference;
  const size_t a_underscores = leading_underscores(a.name);
  const size_t b_underscores = leading_underscores(b.name);
  if (a_underscores != b_underscores) return a_underscores < b_underscores;
  const size_t a_length = std::strlen(a.name), b_length = std::strlen(b.name);
  if (a_length != b_length) return a_length < b_length;
  return std::strcmp(a.name, b.name) < 0;
}

}  // namespace

void SymbolTable::load() {
  loaded_ = true;
  std::vector<Candidate> candidates;
  const int count = dwfl_module_getsymtab(module_);
  for (int i = 1; i < count; ++i) {  // entry 0 is the null symbol
    GElf_Sym symbol;
    GElf_Addr address = 0;
    GElf_Word section_index = 0;
    Elf* elf = nullptr;
    Dwarf_Addr bias = 0;
    const char* name =
        dwfl_module_getsym_info(module_, i, &symbol, &address, &section_index, &elf, &bias);
    if (name == nullptr || name[0] == '\0' || !names_code(symbol, section_index, elf)) continue;
    candidates.push_back({address, symbol.st_size, preference(symbol), name});
  }
  std::sort(candidates.begin(), candidates.end(), before);
  symbols_.reserve(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& candidate = candidates[i];
    if (i > 0 && candidates[i - 1].start == candidate.start) continue;  // a less preferred alias
    Dwarf_Addr end = candidate.start + candidate.size;
    if (candidate.size == 0) {
      // Up to the next symbol at a higher address; the last sizeless symbol covers nothing,
      // as nothing says where it ends.
      size_t next = i + 1;
      while (next < candidates.size() && candidates[next].start == candidate.start) ++next;
      end = next < candidates.size() ? candidates[next].start : candidate.start;
    }
    if (end > candidate.start) symbols_.push_back({candidate.start, end, candidate.name});
  }
  max_end_.reserve(symbols_.size());
  Dwarf_Addr highest = 0;
  for (const Symbol& symbol : symbols_) {
    highest = std::max(highest, symbol.end);
    max_end_.push_back(highest);
  }
}

const char* SymbolTable::name_at(Dwarf_Addr address) {
  if (!loaded_) load();
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                             [](Dwarf_Addr a, const Symbol& symbol) { return a < symbol.start; });
  // The innermost symbol holding the address: the last starting before it whose extent reaches
  // it (sized symbols may nest, e.g. a local label symbol with a size inside a function).
  for (size_t i = static_cast<size_t>(it - symbols_.begin()); i-- > 0;) {
    if (max_end_[i] <= address) break;
    if (address < symbols_[i].end) return symbols_[i].name;
  }
  return nullptr;
}

}  // namespace gmt::analyzer::symbolize
