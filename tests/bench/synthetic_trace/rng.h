// SPDX-License-Identifier: Apache-2.0
// The generators' random numbers, seeded from --seed: the same arguments always give the same
// file, so the benchmark's traces and the fuzzer's seeds can be made again.
#pragma once

#include <cstdint>

namespace gmt::bench {

// SplitMix64: fast, and good enough to spread choices; the point is reproducibility.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return next() % n; }
  bool one_in(uint64_t n) { return below(n) == 0; }

 private:
  uint64_t state_;
};

}  // namespace gmt::bench
