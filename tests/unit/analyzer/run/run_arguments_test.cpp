// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <stdexcept>

#include "analyzer/run/launcher.h"

namespace gmt::analyzer {
namespace {

RunOptions parse(std::vector<const char*> args) {
  return parse_run_arguments(static_cast<int>(args.size()), args.data());
}

TEST(RunArguments, TheProgramKeepsItsOwnOptionsAndDoubleDashes) {
  const RunOptions a = parse({"-o", "t.%p.gmt", "python", "train.py", "-o", "x", "--", "--lr=1"});
  EXPECT_EQ(a.output_pattern, "t.%p.gmt");
  EXPECT_EQ(a.command, (std::vector<std::string>{"python", "train.py", "-o", "x", "--", "--lr=1"}));

  const RunOptions b = parse({"--output=out/%r.gmt", "--", "-weird-program-name", "--"});
  EXPECT_EQ(b.output_pattern, "out/%r.gmt");
  EXPECT_EQ(b.command, (std::vector<std::string>{"-weird-program-name", "--"}));

  const RunOptions c = parse({"ls"});
  EXPECT_EQ(c.output_pattern, "");
  EXPECT_EQ(c.stacks, "");
  EXPECT_EQ(c.command, (std::vector<std::string>{"ls"}));

  const RunOptions d = parse({"--stacks", "native", "-o", "x.gmt", "python", "--stacks", "no"});
  EXPECT_EQ(d.stacks, "native");
  EXPECT_EQ(d.command, (std::vector<std::string>{"python", "--stacks", "no"}));
  EXPECT_EQ(parse({"--stacks=none", "ls"}).stacks, "none");
}

TEST(RunArguments, MistakesAreExplained) {
  try {
    parse({"--output"});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--output needs a path pattern");
  }
  try {
    parse({"--frobnicate", "ls"});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("unknown option '--frobnicate'", 0), 0u) << e.what();
  }
  try {
    parse({"--stacks", "everything", "ls"});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--stacks takes none, native, python or all, not 'everything'");
  }
  EXPECT_THROW(parse({"--stacks"}), std::invalid_argument);
  EXPECT_THROW(parse({"-o", "x.gmt"}), std::invalid_argument);
  EXPECT_THROW(parse({"--"}), std::invalid_argument);
}

// --max-size is checked here, so that a typo is refused before anything runs.
TEST(RunArguments, MaxSizeIsASizeOfAtLeastOneMiB) {
  EXPECT_EQ(parse({"--max-size", "1GiB", "ls"}).max_size, "1GiB");
  EXPECT_EQ(parse({"--max-size=64MiB", "ls"}).max_size, "64MiB");
  // The one size syntax (format/size_text.h), as `check --max-peak` takes it.
  EXPECT_EQ(parse({"--max-size", "1.5GiB", "ls"}).max_size, "1.5GiB");
  EXPECT_EQ(parse({"ls"}).max_size, "");
  try {
    parse({"--max-size", "10parsecs", "ls"});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "--max-size takes a size of at least 1MiB (such as 1GiB, 1.5GiB, 64MiB or a "
                 "number of bytes), not '10parsecs'");
  }
  EXPECT_THROW(parse({"--max-size=512KiB", "ls"}), std::invalid_argument);
  EXPECT_THROW(parse({"--max-size"}), std::invalid_argument);
}

// --jax-allocator takes what XLA_PYTHON_CLIENT_ALLOCATOR takes, checked before anything runs.
TEST(RunArguments, JaxAllocatorIsOneOfXlasAllocators) {
  EXPECT_EQ(parse({"--jax-allocator", "platform", "python", "g.py"}).jax_allocator, "platform");
  EXPECT_EQ(parse({"--jax-allocator=bfc", "ls"}).jax_allocator, "bfc");
  EXPECT_EQ(parse({"--jax-allocator=cuda_async", "ls"}).jax_allocator, "cuda_async");
  EXPECT_EQ(parse({"--jax-allocator=default", "ls"}).jax_allocator, "default");
  EXPECT_EQ(parse({"ls"}).jax_allocator, "");
  try {
    parse({"--jax-allocator", "cudaMalloc", "ls"});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "--jax-allocator takes platform, bfc, cuda_async or default, not 'cudaMalloc'");
  }
  EXPECT_THROW(parse({"--jax-allocator"}), std::invalid_argument);
}

// -h and --help before the command ask for the usage; after it they are the program's.
TEST(RunArguments, HelpIsAskedBeforeTheCommand) {
  EXPECT_TRUE(parse({"--help"}).help);
  EXPECT_TRUE(parse({"-o", "x.gmt", "-h"}).help);
  const RunOptions program = parse({"python", "--help"});
  EXPECT_FALSE(program.help);
  EXPECT_EQ(program.command, (std::vector<std::string>{"python", "--help"}));
  EXPECT_EQ(std::string(run_usage()).rfind("usage: gpumemtrace run [-o PATTERN]", 0), 0u);
}

}  // namespace
}  // namespace gmt::analyzer
