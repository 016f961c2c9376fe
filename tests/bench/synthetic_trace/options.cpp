// SPDX-License-Identifier: Apache-2.0
// Parses synthetic_trace's command line (options.h), checking the values against what the
// generators and the format take.
#include "tests/bench/synthetic_trace/options.h"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "format/file_header.h"

namespace gmt::bench {
namespace {

uint64_t parse_count(const char* flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') {
    throw std::runtime_error(std::string(flag) + ": not a number: " + text);
  }
  return v;
}

}  // namespace

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--framework-blocks") {
      o.framework_blocks = true;
      continue;
    }
    if (i + 1 >= argc) throw std::runtime_error(std::string(flag) + " needs a value");
    const char* value = argv[++i];
    if (flag == "--output") {
      o.output = value;
    } else if (flag == "--events") {
      o.events = parse_count(argv[i - 1], value);
    } else if (flag == "--stacks") {
      o.stacks = static_cast<uint32_t>(parse_count(argv[i - 1], value));
    } else if (flag == "--live") {
      o.live = parse_count(argv[i - 1], value);
    } else if (flag == "--threads") {
      o.threads = static_cast<uint32_t>(parse_count(argv[i - 1], value));
    } else if (flag == "--devices") {
      o.devices = static_cast<int>(parse_count(argv[i - 1], value));
    } else if (flag == "--seed") {
      o.seed = parse_count(argv[i - 1], value);
    } else if (flag == "--vmm-one-in") {
      o.vmm_one_in = parse_count(argv[i - 1], value);
    } else if (flag == "--fail-one-in") {
      o.fail_one_in = parse_count(argv[i - 1], value);
    } else if (flag == "--chunk-size") {
      o.chunk_size = static_cast<uint32_t>(parse_count(argv[i - 1], value));
    } else {
      throw std::runtime_error("unknown option " + std::string(flag));
    }
  }
  if (o.output.empty()) throw std::runtime_error("--output PATH is required");
  if (o.vmm_one_in == 0 || o.fail_one_in == 0) throw std::runtime_error("--*-one-in: 1 or more");
  if (o.stacks == 0 || o.live == 0 || o.threads == 0 || o.devices <= 0 || o.devices > 64) {
    throw std::runtime_error("--stacks, --live and --threads must be positive, --devices 1..64");
  }
  const uint32_t c = o.chunk_size;
  if (c < gmt::format::kMinChunkSize || c > gmt::format::kMaxChunkSize || (c & (c - 1)) != 0) {
    throw std::runtime_error("--chunk-size must be a power of two from 4 KiB to 16 MiB");
  }
  return o;
}

}  // namespace gmt::bench
