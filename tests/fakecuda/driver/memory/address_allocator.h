// SPDX-License-Identifier: Apache-2.0
// A first-fit allocator of (fake) address ranges.
//
// Device pointers are never dereferenced, so they need no backing; what matters is that live
// ranges never overlap and that freed addresses are reused the way a real allocator reuses them:
// freeing a block and allocating the same size again returns the same address. First fit over an
// address-ordered, coalesced free list gives exactly that.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace fakecuda {

class AddressAllocator {
 public:
  AddressAllocator(uint64_t base, uint64_t size);

  // The lowest address aligned to `alignment` (a power of two) with `size` free bytes after it.
  std::optional<uint64_t> allocate(uint64_t size, uint64_t alignment);
  // Exactly [address, address + size), if all of it is free.
  bool allocate_at(uint64_t address, uint64_t size);
  // Returns a range obtained from allocate/allocate_at; merges it with free neighbours.
  void release(uint64_t address, uint64_t size);

  bool contains(uint64_t address) const { return address >= base_ && address - base_ < size_; }

 private:
  void carve(std::map<uint64_t, uint64_t>::iterator block, uint64_t address, uint64_t size);

  uint64_t base_;
  uint64_t size_;
  std::map<uint64_t, uint64_t> free_;  // start -> length, non-adjacent
};

}  // namespace fakecuda
