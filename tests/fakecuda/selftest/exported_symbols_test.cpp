// SPDX-License-Identifier: Apache-2.0
// Every cu* function the fake driver exports must be reachable through cuGetProcAddress under
// its base name, since that is how real libraries reach the driver (and what an interposer
// wraps). The exports are read from the ELF dynamic symbol table of libcuda.so.1.
#include <elf.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "selftest/driver_test_support.h"

namespace fakecuda_test {
namespace {

std::string driver_path() {
  Dl_info info{};
  EXPECT_NE(dladdr(driver_symbol("cuInit"), &info), 0);
  return info.dli_fname != nullptr ? info.dli_fname : "";
}

// Defined global functions in .dynsym.
std::vector<std::string> exported_functions(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::vector<std::string> names;
  if (bytes.size() < sizeof(Elf64_Ehdr)) return names;
  const auto* header = reinterpret_cast<const Elf64_Ehdr*>(bytes.data());
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(bytes.data() + header->e_shoff);
  for (int i = 0; i < header->e_shnum; ++i) {
    if (sections[i].sh_type != SHT_DYNSYM) continue;
    const Elf64_Shdr& strings = sections[sections[i].sh_link];
    const auto* symbols = reinterpret_cast<const Elf64_Sym*>(bytes.data() + sections[i].sh_offset);
    size_t count = sections[i].sh_size / sizeof(Elf64_Sym);
    for (size_t j = 0; j < count; ++j) {
      const Elf64_Sym& symbol = symbols[j];
      if (symbol.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(symbol.st_info) != STT_FUNC) continue;
      names.emplace_back(bytes.data() + strings.sh_offset + symbol.st_name);
    }
  }
  return names;
}

// cuMemcpyHtoD_v2_ptds -> cuMemcpyHtoD; cuGraphInstantiateWithParams_ptsz -> ...WithParams.
std::string base_name(std::string name) {
  static const std::regex suffix("(_ptsz|_ptds|_v[0-9]+)$");
  std::string previous;
  while (previous != name) {
    previous = name;
    name = std::regex_replace(name, suffix, "");
  }
  return name;
}

// Everything cuGetProcAddress hands out for `base` at any version, with any stream flag.
std::set<void*> reachable(const std::string& base) {
  std::set<void*> found;
  for (int version = 2000; version <= 13000; version += 10) {
    for (cuuint64_t flags :
         {CU_GET_PROC_ADDRESS_DEFAULT, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM}) {
      void* function = nullptr;
      if (cuGetProcAddress_v2(base.c_str(), &function, version, flags, nullptr) == CUDA_SUCCESS &&
          function != nullptr) {
        found.insert(function);
      }
    }
  }
  return found;
}

TEST(ExportedSymbols, EveryDriverExportIsReachableThroughCuGetProcAddress) {
  std::vector<std::string> exports = exported_functions(driver_path());
  size_t checked = 0;
  for (const std::string& name : exports) {
    if (name.rfind("cu", 0) != 0) continue;
    ++checked;
    EXPECT_EQ(reachable(base_name(name)).count(driver_symbol(name.c_str())), 1u)
        << name << " (base name " << base_name(name) << ") is not in the cuGetProcAddress table";
  }
  EXPECT_GT(checked, 100u);
}

TEST(ExportedSymbols, OnlyTheCudaApiAndIntrospectionAreExported) {
  for (const std::string& name : exported_functions(driver_path())) {
    bool public_api = name.rfind("cu", 0) == 0 || name == "fakecuda_process_used_bytes" ||
                      name == "fakecuda_live_context_count";
    EXPECT_TRUE(public_api) << name;
  }
}

}  // namespace
}  // namespace fakecuda_test
