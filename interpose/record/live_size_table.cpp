// SPDX-License-Identifier: Apache-2.0
#include "interpose/record/live_size_table.h"

namespace gmt::interpose {

bool LiveSizeTable::put(uint64_t key, const Entry& entry, Entry* replaced) {
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

bool LiveSizeTable::take(uint64_t key, Entry* taken) {
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

void LiveSizeTable::clear() {
  slots_.reset();
  capacity_ = live_ = used_ = 0;
}

// Doubles when live entries fill a quarter (so that after a rehash at most half is used);
// otherwise rehashes in place at the same size, which drops the tombstones.
void LiveSizeTable::grow() {
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
