// SPDX-License-Identifier: Apache-2.0
// synthetic_trace: writes a large, realistic trace for timing the analyzer (scripts/
// bench-analyzer.sh), without a GPU and without running a program for minutes.
//
//   synthetic_trace --output PATH [--events N] [--stacks S] [--live L] [--threads T]
//                   [--devices D] [--seed X] [--chunk-size BYTES] [--vmm-one-in N]
//                   [--fail-one-in N] [--framework-blocks]
//
// The bytes are the preload library's (trace_writer.h). What they tell is a caching allocator's
// driver allocations (driver_generator.h) or, with --framework-blocks, a PyTorch training loop's
// block events and roles (framework_generator.h). The random generator is seeded, so the same
// arguments always give the same file. Prints the file's path, events and bytes as JSON; a usage
// error exits 2.
#include <cstdio>
#include <exception>

#include "tests/bench/synthetic_trace/driver_generator.h"
#include "tests/bench/synthetic_trace/framework_generator.h"
#include "tests/bench/synthetic_trace/options.h"

using gmt::bench::FrameworkGenerator;
using gmt::bench::Generator;
using gmt::bench::Options;
using gmt::bench::parse;

int main(int argc, char** argv) {
  try {
    const Options options = parse(argc, argv);
    if (options.framework_blocks) {
      FrameworkGenerator generator(options);
      generator.run();
      std::printf("{\"path\": \"%s\", \"events\": %llu, \"file_bytes\": %llu, %s}\n",
                  options.output.c_str(), static_cast<unsigned long long>(generator.events()),
                  static_cast<unsigned long long>(generator.file_size()), generator.mix().c_str());
      return 0;
    }
    Generator generator(options);
    generator.run();
    std::printf("{\"path\": \"%s\", \"events\": %llu, \"file_bytes\": %llu}\n",
                options.output.c_str(), static_cast<unsigned long long>(generator.events()),
                static_cast<unsigned long long>(generator.file_size()));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "synthetic_trace: %s\n", e.what());
    std::fprintf(stderr,
                 "usage: synthetic_trace --output PATH [--events N] [--stacks S] [--live L] "
                 "[--threads T] [--devices D] [--seed X] [--chunk-size BYTES] [--vmm-one-in N] "
                 "[--fail-one-in N] [--framework-blocks]\n");
    return 2;
  }
}
