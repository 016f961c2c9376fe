// SPDX-License-Identifier: Apache-2.0
// The process-wide module cache behind every Symbolizer: one opened copy per file, shared by
// symbolizers on any thread, with the same answers as a symbolizer of its own.
#include <link.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "analyzer/symbolize/module_debug_info.h"
#include "analyzer/symbolize/symbolizer.h"

namespace gmt::analyzer {
namespace {

__attribute__((noinline)) int shared_modules_probe(int x) {
  asm volatile("");
  return x * 3 + 1;
}

// This test program as a recorder would list it (no build-id: the file is used as is).
ModuleInfo this_program() {
  ModuleInfo module;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* out = static_cast<ModuleInfo*>(data);
        out->load_base = info->dlpi_addr;
        out->start = UINT64_MAX;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& p = info->dlpi_phdr[i];
          if (p.p_type != PT_LOAD) continue;
          out->start = std::min<uint64_t>(out->start, info->dlpi_addr + p.p_vaddr);
          out->end = std::max<uint64_t>(out->end, info->dlpi_addr + p.p_vaddr + p.p_memsz);
        }
        return 1;  // the first entry is the program
      },
      &module);
  char path[PATH_MAX] = {};
  const ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
  if (length > 0) module.path.assign(path, static_cast<size_t>(length));
  return module;
}

TEST(SharedModules, OneOpenedCopyPerFile) {
  const ModuleInfo program = this_program();
  ASSERT_FALSE(program.path.empty());
  const auto first = symbolize::shared_module_debug_info(program.path, "");
  const auto again = symbolize::shared_module_debug_info(program.path, "");
  EXPECT_EQ(first.get(), again.get());
  EXPECT_TRUE(first->usable()) << first->problem();
  const auto missing = symbolize::shared_module_debug_info("/nonexistent/gmt/libgone.so", "ab");
  EXPECT_FALSE(missing->usable());
  EXPECT_EQ(missing.get(),
            symbolize::shared_module_debug_info("/nonexistent/gmt/libgone.so", "ab").get());
  // Another expected build-id is another question about the same path.
  EXPECT_NE(missing.get(),
            symbolize::shared_module_debug_info("/nonexistent/gmt/libgone.so", "cd").get());
}

TEST(SharedModules, SymbolizersOnManyThreadsAgree) {
  const ModuleInfo program = this_program();
  const auto address = reinterpret_cast<uint64_t>(&shared_modules_probe);
  ASSERT_GE(address, program.start);
  ASSERT_LT(address, program.end);
  // Addresses across the function and beyond it, so that threads look up new ones at once.
  std::vector<uint64_t> addresses;
  for (uint64_t offset = 0; offset < 4096; offset += 16) addresses.push_back(address + offset);

  const auto run = [&](std::vector<std::string>& out) {
    Symbolizer symbolizer;
    symbolizer.add_module(program);
    for (uint64_t a : addresses) {
      std::string text;
      for (const SymbolizedFrame& f : symbolizer.symbolize(a, false)) {
        text += f.function + "@" + f.file.value_or("?") + ":" + std::to_string(f.line.value_or(0)) +
                ";";
      }
      out.push_back(text);
    }
  };
  std::vector<std::string> alone;
  run(alone);
  EXPECT_NE(alone.front().find("shared_modules_probe"), std::string::npos) << alone.front();

  std::vector<std::vector<std::string>> results(6);
  std::vector<std::thread> threads;
  for (auto& result : results) threads.emplace_back(run, std::ref(result));
  for (std::thread& t : threads) t.join();
  for (const auto& result : results) EXPECT_EQ(result, alone);
  EXPECT_EQ(shared_modules_probe(1), 4);
}

}  // namespace
}  // namespace gmt::analyzer
