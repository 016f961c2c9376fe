// SPDX-License-Identifier: Apache-2.0
// A training loop behind a caching allocator (caching_allocator.h), for the block events: the
// trace sees the allocator's segments, and through gpumemtrace_framework_block() its blocks. It
// plants a leak behind the cache: keep_activation() keeps one activation every third step, while
// the loop's other blocks come and go and the cache grows wherever a request no longer fits.
//
// `cached_training fragment` instead fills one segment with five 4 MiB blocks, frees the second
// and the fourth, and asks for 6 MiB: 8 MiB are free in the cache, in two 4 MiB holes, so the
// allocator asks the runtime for a new segment; run with too little device memory for it, it
// reports its OOM. Prints `oom=1` when it did, and the allocator's figures. With
// SIM_ALLOCATOR=pytorch it first takes a small segment and frees its one block: the allocator
// releases that segment and asks again before its OOM, as PyTorch does (`released=N`).
//
// `cached_training fill` allocates 4 MiB blocks until one fails, catches the failure (as a program
// that sizes a pool by filling the device does), frees two blocks of every three, and asks for
// 16 MiB. Prints `filled=N` (the blocks it held) and `oom=1` when the last request failed.
//
// `cached_training seed`: the README's scenario, x = a 1 GiB tensor, y = x * 2, del x; prints
// the allocator's most allocated and reserved (torch.cuda.max_memory_allocated() and
// max_memory_reserved(): 2 GiB each).
//
// `cached_training STEPS [KEEP_EVERY]`: KEEP_EVERY (3 unless given) spaces the kept activations,
// so that a long run (a bounded trace's) keeps few.
//
// With SIM_ALLOCATOR=pytorch the allocator reports as PyTorch's trace tracker does (the sizes
// asked for, not the blocks'), and the loop ends holding what makes the two differ most: a
// 4-byte scalar (a 512-byte block, as a loss tensor) and a request that takes a whole 20 MiB
// segment because what would be left (under 1 MiB) is not worth splitting off.
//
// Prints `keep_line=N` (the line of keep_activation's allocation), the kept blocks' count and
// bytes, and the allocator's own figures at the end, for the tests to compare exactly.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/workloads/caching_allocator.h"

namespace training {

constexpr std::size_t kMiB = 1024 * 1024;
int keep_every = 3;

std::vector<void*> kept;
std::size_t kept_bytes = 0;
int keep_line = 0;

void* must(void* p) {
  if (p == nullptr) {
    std::fprintf(stderr, "cached_training: out of memory\n");
    std::exit(1);
  }
  return p;
}

// The bug: a copy of an activation kept "for debugging", never released.
__attribute__((noinline)) void keep_activation(sim::CachingAllocator& allocator) {
  constexpr std::size_t kBytes = 3 * kMiB + 1000;
  const uint64_t before = allocator.allocated_bytes();
  keep_line = __LINE__ + 1;
  kept.push_back(must(allocator.allocate(kBytes)));
  // The block's own size: rounded, and what is left of its segment when too small to split.
  kept_bytes += allocator.allocated_bytes() - before;
}

__attribute__((noinline)) void step(sim::CachingAllocator& allocator, int n) {
  std::vector<void*> activations;
#pragma GCC unroll 1
  for (int layer = 0; layer < 4; ++layer) {
    activations.push_back(must(allocator.allocate((4 + layer) * kMiB)));
  }
  void* scratch = must(allocator.allocate(64 * 1024));  // small pool
  if (n % keep_every == 0) keep_activation(allocator);
  allocator.free(scratch);
  for (auto it = activations.rbegin(); it != activations.rend(); ++it) allocator.free(*it);
}

// The blocks' allocation: one site for the five.
__attribute__((noinline)) void* fragment_block(sim::CachingAllocator& allocator) {
  return must(allocator.allocate(4 * kMiB));
}

sim::CachingAllocator::Reporting reporting() {
  const char* as = std::getenv("SIM_ALLOCATOR");
  return as != nullptr && std::strcmp(as, "pytorch") == 0
             ? sim::CachingAllocator::Reporting::kAsPytorch
             : sim::CachingAllocator::Reporting::kBlockSizes;
}

int fragment() {
  sim::CachingAllocator allocator(0, reporting());
  if (reporting() == sim::CachingAllocator::Reporting::kAsPytorch)
    allocator.free(must(allocator.allocate(64 * 1024)));  // a small segment, left free
  std::vector<void*> blocks;
#pragma GCC unroll 1
  for (int i = 0; i < 5; ++i) blocks.push_back(fragment_block(allocator));
  allocator.free(blocks[1]);
  allocator.free(blocks[3]);
  void* big = allocator.allocate(6 * kMiB);
  std::printf("oom=%d\n", big == nullptr ? 1 : 0);
  std::printf("allocated=%llu\n", static_cast<unsigned long long>(allocator.allocated_bytes()));
  std::printf("reserved=%llu\n", static_cast<unsigned long long>(allocator.reserved_bytes()));
  std::printf("segments=%zu\n", allocator.segments());
  std::printf("released=%llu\n", static_cast<unsigned long long>(allocator.released_bytes()));
  std::fflush(stdout);
  return 0;
}

int fill() {
  sim::CachingAllocator allocator(0, reporting());
  std::vector<void*> blocks;
  while (void* block = allocator.allocate(4 * kMiB)) blocks.push_back(block);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (i % 3 != 0) allocator.free(blocks[i]);
  }
  void* big = allocator.allocate(16 * kMiB);
  std::printf("filled=%zu\n", blocks.size());
  std::printf("oom=%d\n", big == nullptr ? 1 : 0);
  std::fflush(stdout);
  return 0;
}

__attribute__((noinline)) void* make_tensor(sim::CachingAllocator& allocator, std::size_t bytes) {
  return must(allocator.allocate(bytes));
}

int seed() {
  sim::CachingAllocator allocator(0, reporting());
  void* x = make_tensor(allocator, 1024 * kMiB);
  void* y = make_tensor(allocator, 1024 * kMiB);  // x * 2
  allocator.free(x);
  std::printf("max_allocated=%llu\n",
              static_cast<unsigned long long>(allocator.max_allocated_bytes()));
  std::printf("max_reserved=%llu\n",
              static_cast<unsigned long long>(allocator.max_reserved_bytes()));
  std::fflush(stdout);
  (void)y;
  return 0;
}

}  // namespace training

namespace training {

// What is held at the end beside the kept activations, as PyTorch reports it.
__attribute__((noinline)) void hold_scalar_and_unsplit_block(sim::CachingAllocator& allocator) {
  static void* loss = must(allocator.allocate(4));
  static void* unsplit = must(allocator.allocate(19 * kMiB + 600 * 1024));
  (void)loss;
  (void)unsplit;
}

}  // namespace training

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "fragment") == 0) return training::fragment();
  if (argc > 1 && std::strcmp(argv[1], "seed") == 0) return training::seed();
  if (argc > 1 && std::strcmp(argv[1], "fill") == 0) return training::fill();
  const int steps = argc > 1 ? std::atoi(argv[1]) : 60;
  if (argc > 2) training::keep_every = std::max(1, std::atoi(argv[2]));
  const bool as_pytorch = training::reporting() == sim::CachingAllocator::Reporting::kAsPytorch;
  sim::CachingAllocator allocator(0, training::reporting());
  void* weights = training::must(allocator.allocate(24 * training::kMiB));
#pragma GCC unroll 1
  for (int n = 0; n < steps; ++n) training::step(allocator, n);
  if (as_pytorch) training::hold_scalar_and_unsplit_block(allocator);
  std::printf("keep_line=%d\n", training::keep_line);
  std::printf("kept_count=%zu\n", training::kept.size());
  std::printf("kept_bytes=%zu\n", training::kept_bytes);
  std::printf("allocated=%llu\n", static_cast<unsigned long long>(allocator.allocated_bytes()));
  std::printf("reserved=%llu\n", static_cast<unsigned long long>(allocator.reserved_bytes()));
  std::printf("segments=%zu\n", allocator.segments());
  std::fflush(stdout);
  (void)weights;  // kept to the end, like a model's weights
  return 0;
}
