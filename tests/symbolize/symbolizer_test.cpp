// SPDX-License-Identifier: Apache-2.0
// The symbolizer against real addresses: the fixture program (tests/symbolize/fixture_main.cpp)
// runs functions of its own and of a dlopen'ed library, and prints their return addresses with
// the __LINE__ of each call, and its modules as the traced process records them. Every
// expectation is exact: function name, source file, line, module, inline chain.
#include "analyzer/symbolize/symbolizer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "tests/symbolize/fixture_run.h"

namespace gmt::analyzer {
namespace {

namespace fs = std::filesystem;
using symbolize_test::FixtureRun;
using symbolize_test::FixtureSite;

constexpr char kLibrarySource[] = "fixture_library.cpp";
constexpr char kMainSource[] = "fixture_main.cpp";
constexpr char kLibraryName[] = "libsymbolize_fixture_library.so";
constexpr char kVariantsDir[] = GMT_SYMBOLIZE_FIXTURE_DIR;
// The fixture's static inline helper: GCC writes no linkage name for it (its DIE's name is
// used), clang writes one, demangled with its arguments.
#if defined(__clang__)
constexpr char kInlinedHelper[] = "inlined_helper(int)";
#else
constexpr char kInlinedHelper[] = "inlined_helper";
#endif

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// An unsymbolized frame's name: the module's file name and the offset ("libfoo.so+0x1a2b").
std::string offset_name(const std::string& path, uint64_t offset) {
  return path.substr(path.find_last_of('/') + 1) + "+" + hex(offset);
}

struct Expected {
  std::string function;
  std::string file;  // basename; "" when no file is expected
  int line = 0;      // 0 when no line is expected
  bool inlined = false;
};

void expect_frame(const SymbolizedFrame& frame, const Expected& expected,
                  const std::string& module) {
  EXPECT_EQ(frame.function, expected.function);
  if (expected.file.empty()) {
    EXPECT_FALSE(frame.file.has_value()) << *frame.file;
  } else if (!frame.file) {
    ADD_FAILURE() << "no file, expected " << expected.file;
  } else {
    EXPECT_EQ(fs::path(*frame.file).filename(), expected.file);
    // DWARF gives the path the compiler saw, joined with the compilation directory.
    EXPECT_TRUE(fs::path(*frame.file).is_absolute()) << *frame.file;
  }
  if (expected.line == 0) {
    EXPECT_FALSE(frame.line.has_value()) << *frame.line;
  } else {
    EXPECT_EQ(frame.line, expected.line);
  }
  EXPECT_EQ(frame.module, module);
  EXPECT_EQ(frame.inlined, expected.inlined);
}

class SymbolizerTest : public ::testing::Test {
 protected:
  // The fixture runs once: its addresses and modules serve every test.
  static void SetUpTestSuite() {
    run_ = new FixtureRun(
        symbolize_test::run_fixture(GMT_SYMBOLIZE_FIXTURE, GMT_SYMBOLIZE_FIXTURE_LIBRARY));
  }
  static void TearDownTestSuite() {
    delete run_;
    run_ = nullptr;
  }

  void SetUp() override {
    ASSERT_EQ(run_->error, "");
    const auto library = run_->module_named(kLibraryName);
    const auto program = run_->module_named("symbolize_fixture");
    ASSERT_TRUE(library && program);
    library_ = *library;
    program_ = *program;
    for (const char* name : {"plain", "namespaced", "static", "inlined", "inline_call_site",
                             "main_program", "plain_entry", "namespaced_entry", "static_entry"}) {
      ASSERT_TRUE(run_->sites.contains(name)) << name;
    }
  }

  static const FixtureSite& site(const std::string& name) { return run_->sites.at(name); }
  // The helper inlined into function_with_inline, as symbolized from the library at `module`:
  // the helper at its call's line, then the function at the line that calls the helper.
  static void expect_inline_chain(const std::vector<SymbolizedFrame>& frames,
                                  const std::string& module) {
    ASSERT_EQ(frames.size(), 2u);
    expect_frame(frames[0], {kInlinedHelper, kLibrarySource, line("inlined"), true}, module);
    expect_frame(frames[1],
                 {"function_with_inline(int)", kLibrarySource, line("inline_call_site"), false},
                 module);
  }

  static uint64_t address(const std::string& name) { return site(name).address; }
  static int line(const std::string& name) { return site(name).line; }

  static void add_all_modules(Symbolizer& symbolizer) {
    for (const ModuleInfo& module : run_->modules) symbolizer.add_module(module);
  }

  // The fixture library as recorded, but with the file at `path` (same code and layout).
  ModuleInfo library_at(const std::string& path) const {
    ModuleInfo module = library_;
    module.path = path;
    return module;
  }

  static FixtureRun* run_;
  ModuleInfo library_;
  ModuleInfo program_;
};

FixtureRun* SymbolizerTest::run_ = nullptr;

TEST_F(SymbolizerTest, PlainFunctionInDlopenedLibrary) {
  Symbolizer symbolizer;
  add_all_modules(symbolizer);
  const auto& frames = symbolizer.symbolize(address("plain"));
  ASSERT_EQ(frames.size(), 1u);
  expect_frame(frames[0], {"gmt_fixture_plain", kLibrarySource, line("plain")}, library_.path);
  EXPECT_TRUE(symbolizer.warnings().empty());
}

TEST_F(SymbolizerTest, NamespacedFunctionWithArgumentsIsDemangled) {
  Symbolizer symbolizer;
  add_all_modules(symbolizer);
  const auto& frames = symbolizer.symbolize(address("namespaced"));
  ASSERT_EQ(frames.size(), 1u);
  expect_frame(frames[0],
               {"gmt_fixture::scale(int, double, char const*)", kLibrarySource, line("namespaced")},
               library_.path);
}

TEST_F(SymbolizerTest, StaticFunctionIsNamedLikeWithoutDebugInfo) {
  // GCC writes no DW_AT_linkage_name for functions with internal linkage; the symbol table
  // gives the demangled name with its parameters.
  Symbolizer symbolizer;
  add_all_modules(symbolizer);
  const auto& frames = symbolizer.symbolize(address("static"));
  ASSERT_EQ(frames.size(), 1u);
  expect_frame(frames[0], {"static_function(int)", kLibrarySource, line("static")}, library_.path);
}

TEST_F(SymbolizerTest, InlinedHelperGivesInlineChain) {
  Symbolizer symbolizer;
  add_all_modules(symbolizer);
  const auto& frames = symbolizer.symbolize(address("inlined"));
  expect_inline_chain(frames, library_.path);
}

// A library without .debug_aranges (clang writes none unless asked): libdwfl finds no unit for
// its addresses, which must still get their file, line and inline chain.
TEST_F(SymbolizerTest, UnitsWithoutAddressRangesAreStillFound) {
  const std::string path = std::string(kVariantsDir) + "/libfixture_no_aranges.so";
  Symbolizer symbolizer;
  symbolizer.add_module(library_at(path));
  const auto& plain = symbolizer.symbolize(address("plain"));
  ASSERT_EQ(plain.size(), 1u);
  expect_frame(plain[0], {"gmt_fixture_plain", kLibrarySource, line("plain")}, path);
  const auto& inlined = symbolizer.symbolize(address("inlined"));
  expect_inline_chain(inlined, path);
  EXPECT_TRUE(symbolizer.warnings().empty());
}

// One name per function: the inlined instance is named as its out-of-line copy's symbol.
TEST_F(SymbolizerTest, InlinedAndOutOfLineCopiesHaveOneName) {
  Symbolizer symbolizer;
  add_all_modules(symbolizer);
  const std::vector<SymbolizedFrame> inlined = symbolizer.symbolize(address("inlined_copy"));
  ASSERT_EQ(inlined.size(), 2u);
  EXPECT_TRUE(inlined[0].inlined);
  EXPECT_EQ(inlined[0].function, "inlined_and_not(int, char const*)");
  EXPECT_EQ(inlined[1].function, "calls_both_copies(int)");
  const std::vector<SymbolizedFrame> out_of_line =
      symbolizer.symbolize(address("out_of_line_copy"));
  ASSERT_EQ(out_of_line.size(), 1u);
  EXPECT_FALSE(out_of_line[0].inlined);
  EXPECT_EQ(out_of_line[0].function, "inlined_and_not(int, char const*)");
}

TEST_F(SymbolizerTest, FunctionInMainExecutable) {
  Symbolizer symbolizer;
  add_all_modules(symbolizer);
  const auto& frames = symbolizer.symbolize(address("main_program"));
  ASSERT_EQ(frames.size(), 1u);
  expect_frame(frames[0], {"main_program_function(int)", kMainSource, line("main_program")},
               program_.path);
}

TEST_F(SymbolizerTest, ExactPcIsLookedUpAsIs) {
  // A function's entry is where the previous function ends: only as an exact PC (the first
  // frame of a stack) does it name the function itself.
  Symbolizer symbolizer;
  add_all_modules(symbolizer);
  EXPECT_EQ(symbolizer.symbolize(address("plain_entry"), false).front().function,
            "gmt_fixture_plain");
  EXPECT_EQ(symbolizer.symbolize(address("namespaced_entry"), false).front().function,
            "gmt_fixture::scale(int, double, char const*)");
  EXPECT_EQ(symbolizer.symbolize(address("static_entry"), false).front().function,
            "static_function(int)");
  EXPECT_NE(symbolizer.symbolize(address("namespaced_entry"), true).front().function,
            "gmt_fixture::scale(int, double, char const*)");
}

TEST_F(SymbolizerTest, ModulesMayBeAddedInAnyOrder) {
  Symbolizer symbolizer;
  for (auto it = run_->modules.rbegin(); it != run_->modules.rend(); ++it) {
    symbolizer.add_module(*it);
  }
  EXPECT_EQ(symbolizer.symbolize(address("plain")).front().function, "gmt_fixture_plain");
  EXPECT_EQ(symbolizer.symbolize(address("main_program")).front().function,
            "main_program_function(int)");
}

TEST_F(SymbolizerTest, RepeatedAddressesComeFromTheCache) {
  Symbolizer symbolizer;
  add_all_modules(symbolizer);
  const auto* first = &symbolizer.symbolize(address("inlined"));
  EXPECT_EQ(&symbolizer.symbolize(address("inlined")), first);
  // Exact PCs and return addresses are different lookups of the same number.
  EXPECT_NE(&symbolizer.symbolize(address("inlined"), false), first);
  // Listing the same modules again (as a recorder may after each dlopen) keeps the cache.
  add_all_modules(symbolizer);
  EXPECT_EQ(&symbolizer.symbolize(address("inlined")), first);
}

TEST_F(SymbolizerTest, BuildIdMismatchIsWarnedOnceAndLeavesOffsets) {
  Symbolizer symbolizer;
  ModuleInfo module = library_;
  module.build_id = "00112233445566778899aabbccddeeff00112233";
  symbolizer.add_module(module);
  for (const char* name : {"plain", "namespaced", "inlined"}) {
    const auto& frames = symbolizer.symbolize(address(name));
    ASSERT_EQ(frames.size(), 1u);
    expect_frame(frames[0], {offset_name(module.path, address(name) - module.load_base), "", 0},
                 module.path);
  }
  const auto warnings = symbolizer.warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(module.path), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("build-id mismatch"), std::string::npos) << warnings[0];
}

TEST_F(SymbolizerTest, AnotherFileAtTheRecordedPathIsNotUsed) {
  // What a rebuilt program looks like: the path holds an ELF file of another build.
  Symbolizer symbolizer;
  symbolizer.add_module(library_at(program_.path));
  const auto& frames = symbolizer.symbolize(address("plain"));
  ASSERT_EQ(frames.size(), 1u);
  expect_frame(frames[0],
               {offset_name(program_.path, address("plain") - library_.load_base), "", 0},
               program_.path);
  ASSERT_EQ(symbolizer.warnings().size(), 1u);
  EXPECT_NE(symbolizer.warnings()[0].find(library_.build_id), std::string::npos);
  EXPECT_NE(symbolizer.warnings()[0].find(program_.build_id), std::string::npos);
}

TEST_F(SymbolizerTest, FileWithoutBuildIdIsNotTheOneThatRan) {
  Symbolizer symbolizer;
  const std::string path = std::string(kVariantsDir) + "/libfixture_no_build_id.so";
  symbolizer.add_module(library_at(path));
  EXPECT_EQ(symbolizer.symbolize(address("plain")).front().function,
            offset_name(path, address("plain") - library_.load_base));
  ASSERT_EQ(symbolizer.warnings().size(), 1u);
  EXPECT_NE(symbolizer.warnings()[0].find("the file has none"), std::string::npos)
      << symbolizer.warnings()[0];
}

TEST_F(SymbolizerTest, MissingFileIsWarnedAndLeavesOffsets) {
  Symbolizer symbolizer;
  symbolizer.add_module(library_at("/nonexistent/gpumemtrace/libgone.so"));
  const auto& frames = symbolizer.symbolize(address("plain"));
  ASSERT_EQ(frames.size(), 1u);
  expect_frame(frames[0], {"libgone.so+" + hex(address("plain") - library_.load_base), "", 0},
               "/nonexistent/gpumemtrace/libgone.so");
  ASSERT_EQ(symbolizer.warnings().size(), 1u);
  EXPECT_NE(symbolizer.warnings()[0].find("cannot open"), std::string::npos);
}

TEST_F(SymbolizerTest, FilesThatAreNotElfAreWarnedAbout) {
  const fs::path folder =
      fs::path(::testing::TempDir()) / ("gmt-symbolize-" + std::to_string(getpid()));
  fs::create_directories(folder);
  const fs::path text_file = folder / "libtext.so";
  std::ofstream(text_file) << "not an ELF file\n";
  Symbolizer symbolizer;
  ModuleInfo text = library_at(text_file.string());
  text.build_id.clear();  // nothing recorded to check against: the file itself must be refused
  symbolizer.add_module(text);
  ModuleInfo directory = program_;
  directory.path = folder.string();
  symbolizer.add_module(directory);
  EXPECT_EQ(symbolizer.symbolize(address("plain")).front().function,
            offset_name(text.path, address("plain") - library_.load_base));
  EXPECT_EQ(symbolizer.symbolize(address("main_program")).front().function,
            offset_name(directory.path, address("main_program") - program_.load_base));
  ASSERT_EQ(symbolizer.warnings().size(), 2u);
  EXPECT_NE(symbolizer.warnings()[0].find("not a usable ELF file"), std::string::npos)
      << symbolizer.warnings()[0];
  EXPECT_NE(symbolizer.warnings()[1].find("not a regular file"), std::string::npos)
      << symbolizer.warnings()[1];
  fs::remove_all(folder);
}

TEST_F(SymbolizerTest, AddressInNoModule) {
  Symbolizer symbolizer;
  const auto& lonely = symbolizer.symbolize(0x1234);
  ASSERT_EQ(lonely.size(), 1u);
  expect_frame(lonely[0], {"0x1234", "", 0}, "");

  add_all_modules(symbolizer);
  expect_frame(symbolizer.symbolize(0x10).at(0), {"0x10", "", 0}, "");
  expect_frame(symbolizer.symbolize(0, true).at(0), {"0x0", "", 0}, "");
  const uint64_t top = std::numeric_limits<uint64_t>::max();
  expect_frame(symbolizer.symbolize(top, false).at(0), {hex(top), "", 0}, "");
  EXPECT_TRUE(symbolizer.warnings().empty());
}

TEST_F(SymbolizerTest, StrippedLibraryGivesNamesWithoutLines) {
  Symbolizer symbolizer;
  const std::string path = std::string(kVariantsDir) + "/libfixture_stripped.so";
  symbolizer.add_module(library_at(path));
  const struct {
    const char* site;
    const char* function;
  } cases[] = {
      {"plain", "gmt_fixture_plain"},
      {"namespaced", "gmt_fixture::scale(int, double, char const*)"},
      {"static", "static_function(int)"},
      // Without DWARF nothing says the helper was inlined: the code is its caller's.
      {"inlined", "function_with_inline(int)"},
  };
  for (const auto& c : cases) {
    const auto& frames = symbolizer.symbolize(address(c.site));
    ASSERT_EQ(frames.size(), 1u) << c.site;
    expect_frame(frames[0], {c.function, "", 0}, path);
  }
  EXPECT_TRUE(symbolizer.warnings().empty());
}

TEST_F(SymbolizerTest, SeparateDebugFileIsFoundThroughDebuglink) {
  Symbolizer symbolizer;
  const std::string path = std::string(kVariantsDir) + "/libfixture_debuglink.so";
  symbolizer.add_module(library_at(path));
  const auto& frames = symbolizer.symbolize(address("inlined"));
  expect_inline_chain(frames, path);
}

TEST_F(SymbolizerTest, DebuginfodIsNeverAsked) {
  // With DEBUGINFOD_URLS set (Debian sets it in every login shell), elfutils' standard lookup
  // would query the servers for the missing debug info, creating its cache folder first.
  const fs::path cache =
      fs::path(::testing::TempDir()) / ("gmt-debuginfod-cache-" + std::to_string(getpid()));
  fs::remove_all(cache);
  const char* old_urls = std::getenv("DEBUGINFOD_URLS");
  const std::string saved_urls = old_urls != nullptr ? old_urls : "";
  setenv("DEBUGINFOD_URLS", "http://127.0.0.1:9/", 1);
  setenv("DEBUGINFOD_CACHE_PATH", cache.c_str(), 1);

  Symbolizer symbolizer;
  symbolizer.add_module(library_at(std::string(kVariantsDir) + "/libfixture_stripped.so"));
  EXPECT_EQ(symbolizer.symbolize(address("plain")).front().function, "gmt_fixture_plain");
  EXPECT_FALSE(fs::exists(cache));

  unsetenv("DEBUGINFOD_CACHE_PATH");
  if (old_urls != nullptr) {
    setenv("DEBUGINFOD_URLS", saved_urls.c_str(), 1);
  } else {
    unsetenv("DEBUGINFOD_URLS");
  }
}

TEST_F(SymbolizerTest, OverlappingModuleReplacesTheEarlierOne) {
  Symbolizer symbolizer;
  add_all_modules(symbolizer);
  EXPECT_TRUE(symbolizer.symbolize(address("plain")).front().file.has_value());
  // dlclose + dlopen of another file at the same place: later stacks get the new module, and
  // what was cached for the old one is forgotten.
  const std::string stripped = std::string(kVariantsDir) + "/libfixture_stripped.so";
  ModuleInfo replacement = library_at(stripped);
  replacement.start += 0x10;  // overlapping, not identical
  symbolizer.add_module(replacement);
  const auto& frames = symbolizer.symbolize(address("plain"));
  EXPECT_EQ(frames.front().module, stripped);
  EXPECT_FALSE(frames.front().file.has_value());

  symbolizer.remove_module(replacement.start);
  expect_frame(symbolizer.symbolize(address("plain")).at(0), {hex(address("plain")), "", 0}, "");
  // The other modules are untouched.
  EXPECT_EQ(symbolizer.symbolize(address("main_program")).front().function,
            "main_program_function(int)");
  symbolizer.remove_module(12345);  // no module starts there: nothing happens
}

TEST_F(SymbolizerTest, InconsistentModuleRecordsDoNotCrash) {
  Symbolizer symbolizer;
  ModuleInfo empty = library_;
  empty.end = empty.start;  // no range: never matches
  symbolizer.add_module(empty);
  EXPECT_EQ(symbolizer.symbolize(address("plain")).front().module, "");

  ModuleInfo shifted = library_;
  shifted.load_base = shifted.end + 0x1000;  // offsets would be negative
  symbolizer.add_module(shifted);
  const auto& frames = symbolizer.symbolize(address("plain"));
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].module, library_.path);
  EXPECT_FALSE(frames[0].line.has_value());

  ModuleInfo unnamed = program_;
  unnamed.path.clear();
  symbolizer.add_module(unnamed);
  EXPECT_EQ(symbolizer.symbolize(address("main_program")).front().function,
            hex(address("main_program") - program_.load_base));

  ModuleInfo vdso = program_;
  vdso.path = "linux-vdso.so.1";
  vdso.start = vdso.end + 0x100000;
  vdso.end = vdso.start + 0x2000;
  vdso.load_base = vdso.start;
  symbolizer.add_module(vdso);
  EXPECT_EQ(symbolizer.symbolize(vdso.start + 0x10).front().function, "linux-vdso.so.1+0x10");

  // The unnamed module is worth a warning; the vDSO, which never has a file, is not.
  const auto warnings = symbolizer.warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("no file name"), std::string::npos) << warnings[0];
}

TEST_F(SymbolizerTest, DamagedFilesDoNotCrash) {
  // Truncated copies (a file still being written, a full disk) and copies whose contents past
  // the headers are scrambled: whatever comes back, the symbolizer must not crash or hang.
  std::ifstream in(library_.path, std::ios::binary);
  const std::string original((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  ASSERT_GT(original.size(), 4096u);
  const fs::path folder =
      fs::path(::testing::TempDir()) / ("gmt-symbolize-damaged-" + std::to_string(getpid()));
  fs::create_directories(folder);
  std::vector<std::string> damaged;
  for (size_t length :
       {size_t{64}, original.size() / 3, original.size() / 2, original.size() - 1}) {
    damaged.push_back(original.substr(0, length));
  }
  for (size_t stride : {7u, 13u, 101u}) {
    std::string scrambled = original;
    for (size_t i = 64 + stride; i < scrambled.size(); i += stride) scrambled[i] ^= 0x5a;
    damaged.push_back(std::move(scrambled));
  }
  for (size_t i = 0; i < damaged.size(); ++i) {
    const fs::path path = folder / ("libdamaged" + std::to_string(i) + ".so");
    std::ofstream(path, std::ios::binary) << damaged[i];
    Symbolizer symbolizer;
    ModuleInfo module = library_at(path.string());
    module.build_id.clear();  // nothing to check against: the damaged file is read
    symbolizer.add_module(module);
    for (const auto& [name, site] : run_->sites) {
      const auto& frames = symbolizer.symbolize(site.address, site.line != 0);
      ASSERT_FALSE(frames.empty()) << name;
      if (site.address >= module.start && site.address < module.end) {
        EXPECT_EQ(frames.back().module, module.path) << name;
      }
    }
  }
  fs::remove_all(folder);
}

}  // namespace
}  // namespace gmt::analyzer
