// SPDX-License-Identifier: Apache-2.0
// The allocations DeviceHighWater counts, by key: an open-addressing table that allocates only
// when it grows, so that an allocation hook does not pay for a heap node per allocation (and a
// free for giving it back), as a node-based map would.
#pragma once

#include <cstdint>
#include <memory>

namespace gmt::interpose {

class LiveSizeTable {
 public:
  struct Entry {
    int device = -1;
    uint32_t context = 0;
    uint64_t size = 0;
  };

  // Inserts or replaces. Returns the entry it replaced, if any, in `replaced`.
  bool put(uint64_t key, const Entry& entry, Entry* replaced);
  // Removes `key`, giving back its entry. False when it is not there.
  bool take(uint64_t key, Entry* taken);
  // Removes every entry for which `drop(entry)` is true.
  template <class Drop>
  void remove_if(Drop drop) {
    for (std::size_t i = 0; i < capacity_; ++i) {
      if (is_live(slots_[i].key) && drop(slots_[i].entry)) {
        slots_[i].key = kTombstone;
        --live_;
      }
    }
  }
  void clear();

 private:
  // Keys 0 and ~0 mark free and vacated slots; no allocation has either (address 0 is never
  // handed out, and the name-space bits of a key never make all ones).
  static constexpr uint64_t kEmpty = 0;
  static constexpr uint64_t kTombstone = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    Entry entry;
  };
  static bool is_live(uint64_t key) { return key != kEmpty && key != kTombstone; }
  std::size_t home(uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & (capacity_ - 1);
  }
  void grow();

  std::unique_ptr<Slot[]> slots_;
  std::size_t capacity_ = 0;
  std::size_t live_ = 0;
  std::size_t used_ = 0;  // live entries and tombstones: what probing walks over
};

}  // namespace gmt::interpose
