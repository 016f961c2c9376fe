// SPDX-License-Identifier: Apache-2.0
// The classes of what was never freed, from sites built by hand: what a library keeps on purpose
// (library_cache) against what the program never freed, and growth before either.
#include "analyzer/model/leak_classes.h"

#include <gtest/gtest.h>

namespace gmt::analyzer {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

// A trace whose stacks 1 and 2 were made in cuBLAS, stack 3 in the program itself, with
// kLeakSamples samples one second apart.
TraceSummary trace_with_library_and_program() {
  TraceSummary t;
  t.argv = {"/home/me/train"};
  format::ModuleRecord cublas;
  cublas.path = "/usr/local/cuda/lib64/libcublasLt.so.12";
  cublas.start = 0x1000;
  cublas.end = 0x2000;
  format::ModuleRecord program;
  program.path = "/home/me/train";
  program.start = 0x5000;
  program.end = 0x6000;
  t.modules = {cublas, program};
  t.stacks[1] = {0x1100, 0x5100};
  t.stacks[2] = {0x1200, 0x5100};
  t.stacks[3] = {0x5200};
  for (uint64_t i = 0; i < kLeakSamples; ++i) t.sample_times.push_back(i * 1'000'000'000);
  return t;
}

SiteStats site(uint32_t stack, std::vector<uint64_t> samples, uint64_t count) {
  SiteStats s;
  s.device = 0;
  s.stack = stack;
  s.live_bytes = s.live_resident_bytes = samples.back();
  s.live_count = s.live_resident_count = count;
  s.allocations = count;
  s.live_samples = std::move(samples);
  s.live_count_samples.assign(s.live_samples.size(), count);
  return s;
}

const LeakGroup* group_of(const TraceSummary& t, uint32_t stack) {
  for (const LeakGroup& g : t.leaks) {
    if (g.stack == stack) return &g;
  }
  return nullptr;
}

TEST(LeakClasses, WhatALibraryKeepsIsItsCacheAndNotLeaked) {
  TraceSummary t = trace_with_library_and_program();
  // A workspace made once and kept, and the same size never freed by the program.
  t.sites[site_key(0, 1)] = site(1, std::vector<uint64_t>(kLeakSamples, 32 * kMiB), 1);
  t.sites[site_key(0, 3)] = site(3, std::vector<uint64_t>(kLeakSamples, 8 * kMiB), 1);
  classify_leaks(t);
  ASSERT_EQ(t.leaks.size(), 2u);
  const LeakGroup* workspace = group_of(t, 1);
  ASSERT_NE(workspace, nullptr);
  EXPECT_EQ(workspace->leak_class, LeakClass::kLibraryCache);
  EXPECT_EQ(workspace->bytes, 32 * kMiB);
  EXPECT_STREQ(leak_class_name(workspace->leak_class), "library_cache");
  EXPECT_EQ(group_of(t, 3)->leak_class, LeakClass::kUnfreed);
  EXPECT_FALSE(unintended(LeakClass::kLibraryCache));
  EXPECT_EQ(leaked_on(t, 0), 8 * kMiB);  // the program's own, not the library's
}

TEST(LeakClasses, ALibrarySiteThatKeepsGrowingIsAProbableLeak) {
  TraceSummary t = trace_with_library_and_program();
  // A new handle (and workspace) every step, never destroyed: growth beats the library's class.
  std::vector<uint64_t> growing;
  for (uint64_t i = 1; i <= kLeakSamples; ++i) growing.push_back(i * 4 * kMiB);
  t.sites[site_key(0, 2)] = site(2, growing, kLeakSamples);
  classify_leaks(t);
  ASSERT_EQ(t.leaks.size(), 1u);
  EXPECT_EQ(t.leaks[0].leak_class, LeakClass::kProbableLeak);
  EXPECT_EQ(t.leaks[0].bytes, 40 * kMiB);
  EXPECT_EQ(leaked_on(t, 0), 40 * kMiB);
}

TEST(LeakClasses, ASiteOfFewerAllocationsThanSamplesIsNotJudgedByGrowth) {
  TraceSummary t = trace_with_library_and_program();
  // Six allocations, three of them never freed, whose samples happened to miss its frees: what
  // the samples show depends on where they fell, so the site is what it is at the end.
  std::vector<uint64_t> seen = {0,        0,        0,         0,         1 * kMiB,
                                5 * kMiB, 6 * kMiB, 13 * kMiB, 13 * kMiB, 10 * kMiB};
  t.sites[site_key(0, 3)] = site(3, seen, 3);
  t.sites[site_key(0, 3)].allocations = 6;
  classify_leaks(t);
  ASSERT_EQ(t.leaks.size(), 1u);
  EXPECT_EQ(t.leaks[0].leak_class, LeakClass::kUnfreed);
  EXPECT_EQ(t.leaks[0].bytes, 10 * kMiB);

  // The same samples of a site that allocated as often as the samples are taken: it grew until
  // its exit.
  t.sites[site_key(0, 3)].allocations = kLeakSamples;
  classify_leaks(t);
  ASSERT_EQ(t.leaks.size(), 1u);
  EXPECT_EQ(t.leaks[0].leak_class, LeakClass::kProbableLeak);
  EXPECT_EQ(t.leaks[0].bytes, 13 * kMiB);

  // Six allocations never freed, growing: where the samples fall, they show growth.
  std::vector<uint64_t> kept = {0,        0,        0,        0,        1 * kMiB,
                                2 * kMiB, 3 * kMiB, 4 * kMiB, 5 * kMiB, 6 * kMiB};
  t.sites[site_key(0, 3)] = site(3, kept, 6);
  t.sites[site_key(0, 3)].allocations = 6;
  classify_leaks(t);
  ASSERT_EQ(t.leaks.size(), 1u);
  EXPECT_EQ(t.leaks[0].leak_class, LeakClass::kProbableLeak);
  EXPECT_EQ(t.leaks[0].bytes, 6 * kMiB);
}

}  // namespace
}  // namespace gmt::analyzer
