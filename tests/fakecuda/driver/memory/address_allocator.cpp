// SPDX-License-Identifier: Apache-2.0
#include "driver/memory/address_allocator.h"

#include <iterator>

namespace fakecuda {

AddressAllocator::AddressAllocator(uint64_t base, uint64_t size) : base_(base), size_(size) {
  free_.emplace(base, size);
}

std::optional<uint64_t> AddressAllocator::allocate(uint64_t size, uint64_t alignment) {
  if (size == 0 || alignment == 0) return std::nullopt;
  for (auto block = free_.begin(); block != free_.end(); ++block) {
    uint64_t start = block->first;
    uint64_t end = start + block->second;
    uint64_t aligned = (start + alignment - 1) & ~(alignment - 1);
    if (aligned < start || aligned > end || end - aligned < size) continue;
    carve(block, aligned, size);
    return aligned;
  }
  return std::nullopt;
}

bool AddressAllocator::allocate_at(uint64_t address, uint64_t size) {
  if (size == 0) return false;
  auto block = free_.upper_bound(address);
  if (block == free_.begin()) return false;
  --block;
  uint64_t end = block->first + block->second;
  if (address + size < address || address + size > end) return false;
  carve(block, address, size);
  return true;
}

void AddressAllocator::carve(std::map<uint64_t, uint64_t>::iterator block, uint64_t address,
                             uint64_t size) {
  uint64_t start = block->first;
  uint64_t end = start + block->second;
  free_.erase(block);
  if (address > start) free_.emplace(start, address - start);
  if (address + size < end) free_.emplace(address + size, end - (address + size));
}

void AddressAllocator::release(uint64_t address, uint64_t size) {
  auto next = free_.lower_bound(address);
  uint64_t start = address;
  uint64_t length = size;
  if (next != free_.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == address) {
      start = previous->first;
      length += previous->second;
      free_.erase(previous);
    }
  }
  if (next != free_.end() && next->first == address + size) {
    length += next->second;
    free_.erase(next);
  }
  free_.emplace(start, length);
}

}  // namespace fakecuda
