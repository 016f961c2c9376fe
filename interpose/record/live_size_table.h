// SPDX-License-Identifier: Apache-2.0
// Live allocations by key: an open-addressing table that allocates only when it grows, so that
// an allocation hook does not pay for a heap node per allocation (and a free for giving it
// back), as a node-based map would. DeviceHighWater keeps sizes in it; a bounded trace's live set
// (LiveSet) keeps the allocations' records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace gmt::interpose {

template <class E>
class LiveTable {
 public:
  using Entry = E;

  // Inserts or replaces. Returns the entry it replaced, if any, in `replaced`.
  bool put(uint64_t key, const Entry& entry, Entry* replaced);
  // Removes `key`, giving back its entry. False when it is not there.
  bool take(uint64_t key, Entry* taken);
  // The entry of `key`, or null.
  const Entry* find(uint64_t key) const;
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
  // Calls `visit(entry)` for every entry, in no particular order.
  template <class Visit>
  void for_each(Visit visit) const {
    for (std::size_t i = 0; i < capacity_; ++i) {
      if (is_live(slots_[i].key)) visit(slots_[i].entry);
    }
  }
  std::size_t size() const { return live_; }
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

struct LiveSizeEntry {
  int device = -1;
  uint32_t context = 0;
  uint64_t size = 0;
};
using LiveSizeTable = LiveTable<LiveSizeEntry>;

template <class E>
bool LiveTable<E>::put(uint64_t key, const Entry& entry, Entry* replaced) {
  if (key == kEmpty || key == kTombstone) return false;
  if ((used_ + 1) * 2 > capacity_) grow();
  std::size_t vacated = capacity_;
  for (std::size_t i = home(key);; i = (i + 1) & (capacity_ - 1)) {
    Slot& slot = slots_[i];
    if (slot.key == key) {
      *replaced = slot.entry;
      slot.entry = entry;
      return true;
    }
    if (slot.key == kTombstone && vacated == capacity_) vacated = i;
    if (slot.key == kEmpty) {
      if (vacated != capacity_) {
        slots_[vacated] = Slot{key, entry};
      } else {
        slot = Slot{key, entry};
        ++used_;
      }
      ++live_;
      return false;
    }
  }
}

template <class E>
bool LiveTable<E>::take(uint64_t key, Entry* taken) {
  if (capacity_ == 0 || key == kEmpty || key == kTombstone) return false;
  for (std::size_t i = home(key);; i = (i + 1) & (capacity_ - 1)) {
    Slot& slot = slots_[i];
    if (slot.key == kEmpty) return false;
    if (slot.key == key) {
      *taken = slot.entry;
      slot.key = kTombstone;
      --live_;
      return true;
    }
  }
}

template <class E>
const E* LiveTable<E>::find(uint64_t key) const {
  if (capacity_ == 0 || key == kEmpty || key == kTombstone) return nullptr;
  for (std::size_t i = home(key);; i = (i + 1) & (capacity_ - 1)) {
    const Slot& slot = slots_[i];
    if (slot.key == kEmpty) return nullptr;
    if (slot.key == key) return &slot.entry;
  }
}

template <class E>
void LiveTable<E>::clear() {
  slots_.reset();
  capacity_ = live_ = used_ = 0;
}

// Doubles when live entries fill a quarter (so that after a rehash at most half is used);
// otherwise rehashes in place at the same size, which drops the tombstones.
template <class E>
void LiveTable<E>::grow() {
  const std::size_t capacity =
      capacity_ == 0 ? 64 : (live_ * 4 > capacity_ ? capacity_ * 2 : capacity_);
  std::unique_ptr<Slot[]> old = std::move(slots_);
  const std::size_t old_capacity = capacity_;
  slots_ = std::make_unique<Slot[]>(capacity);
  capacity_ = capacity;
  live_ = used_ = 0;
  for (std::size_t i = 0; i < old_capacity; ++i) {
    if (!is_live(old[i].key)) continue;
    for (std::size_t j = home(old[i].key);; j = (j + 1) & (capacity_ - 1)) {
      if (slots_[j].key == kEmpty) {
        slots_[j] = old[i];
        ++live_;
        ++used_;
        break;
      }
    }
  }
}

}  // namespace gmt::interpose
