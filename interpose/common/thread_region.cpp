// SPDX-License-Identifier: Apache-2.0
#include "interpose/common/thread_region.h"

#include <pthread.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

namespace gmt::interpose::thread_region {
namespace {

constexpr std::size_t kRegionBytes = std::size_t{2} << 20;  // one huge page on x86-64
constexpr std::size_t kAlign = 64;

// The region's bookkeeping sits in its first bytes. It is unmapped by whoever drops its last
// reference: one for each block handed out, and one that its thread holds while it hands out
// from it (dropped when the region is full or the thread ends), in whatever order those come.
struct Region {
  std::atomic<std::size_t> references{1};
  std::size_t used = 0;  // bytes handed out, from the start of the region
};
// Before each block: its region (null: from the heap), so that release() needs no lookup.
struct alignas(kAlign) Header {
  Region* region;
};

thread_local Region* my_region __attribute__((tls_model("initial-exec"))) = nullptr;
pthread_key_t end_key;  // drops the ending thread's reference to its region
bool have_end_key = false;
pthread_once_t end_key_once = PTHREAD_ONCE_INIT;

void drop(Region* region) {
  if (region->references.fetch_sub(1, std::memory_order_acq_rel) == 1) munmap(region, kRegionBytes);
}

void thread_ends(void* region) {
  if (my_region == region) my_region = nullptr;
  drop(static_cast<Region*>(region));
}

Region* new_region() {
  pthread_once(&end_key_once,
               [] { have_end_key = pthread_key_create(&end_key, &thread_ends) == 0; });
  if (!have_end_key) return nullptr;  // it could not be given back when the thread ends
  // Twice the size, then the unaligned ends given back: a 2 MiB aligned range.
  void* mapped = mmap(nullptr, 2 * kRegionBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapped == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(mapped);
  const uintptr_t aligned = (start + kRegionBytes - 1) & ~(kRegionBytes - 1);
  if (aligned > start) munmap(mapped, aligned - start);
  const uintptr_t end = start + 2 * kRegionBytes;
  if (end > aligned + kRegionBytes)
    munmap(reinterpret_cast<void*>(aligned + kRegionBytes), end - aligned - kRegionBytes);
  auto* base = reinterpret_cast<void*>(aligned);
#ifdef MADV_HUGEPAGE
  madvise(base, kRegionBytes, MADV_HUGEPAGE);  // a hint: without it, 4 KiB pages as before
#endif
  auto* region = new (base) Region;
  region->used = (sizeof(Region) + kAlign - 1) & ~(kAlign - 1);
  return region;
}

// The calling thread's region with room for `need` bytes; null when there is none.
Region* region_for(std::size_t need) {
  Region* region = my_region;
  if (region != nullptr && region->used + need <= kRegionBytes) return region;
  if (need > kRegionBytes / 2) return nullptr;  // such a block gets no region of its own
  if (region != nullptr) {                      // full: left to its blocks
    my_region = nullptr;
    pthread_setspecific(end_key, nullptr);
    drop(region);
  }
  region = new_region();
  if (region == nullptr) return nullptr;
  if (pthread_setspecific(end_key, region) != 0) {
    drop(region);
    return nullptr;
  }
  my_region = region;
  return region;
}

}  // namespace

void* allocate(std::size_t size) noexcept {
  const std::size_t need = sizeof(Header) + ((size + kAlign - 1) & ~(kAlign - 1));
  Region* region = region_for(need);
  if (region == nullptr) {
    void* memory = std::aligned_alloc(kAlign, need);
    if (memory == nullptr) return nullptr;
    static_cast<Header*>(memory)->region = nullptr;
    return static_cast<Header*>(memory) + 1;
  }
  auto* header = reinterpret_cast<Header*>(reinterpret_cast<char*>(region) + region->used);
  region->used += need;
  region->references.fetch_add(1, std::memory_order_relaxed);
  header->region = region;
  return header + 1;
}

void release(void* memory) noexcept {
  if (memory == nullptr) return;
  Header* header = static_cast<Header*>(memory) - 1;
  if (header->region == nullptr) {
    std::free(header);
    return;
  }
  drop(header->region);
}

}  // namespace gmt::interpose::thread_region
