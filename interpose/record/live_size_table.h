// SPDX-License-Identifier: Apache-2.0
// Live allocations by key: an open-addressing table that allocates only when it grows, so that
// an allocation hook does not pay for a heap node per allocation (and a free for giving it
// back), as a node-based map would. DeviceHighWater keeps sizes in it; a bounded trace's live set
// (LiveSet) keeps the allocations' records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace gmt::interpose {

template <class E>
class LiveTable {
 public:
  using Entry = E;

  // Inserts or replaces. Returns whether it replaced an entry, given back in `replaced` unless
  // that is null.
  bool put(uint64_t key, const Entry& entry, Entry* replaced);
  // Removes `key`, giving back its entry in `taken` unless that is null. False when it is not
  // there.
  bool take(uint64_t key, Entry* taken);
  // Where `key` is, or kNowhere: for taking it with take_at() while the table has not changed
  // meanwhile, with one probe for both.
  static constexpr std::size_t kNowhere = ~std::size_t{0};
  std::size_t position(uint64_t key) const;
  void take_at(std::size_t position) { remove_at(position); }
  // The entry of `key`, or null.
  const Entry* find(uint64_t key) const;
  Entry* find(uint64_t key) {
    return const_cast<Entry*>(static_cast<const LiveTable*>(this)->find(key));
  }
  // Removes every entry for which `drop(entry)` is true.
  template <class Drop>
  void remove_if(Drop drop) {
    // Rare (a context's teardown): the kept entries are placed again, as a growth would.
    bool dropped = false;
    for (std::size_t i = 0; i < capacity_; ++i) {
      if (slots_[i].key != kEmpty && drop(slots_[i].entry)) {
        slots_[i].key = kDropped;
        dropped = true;
      }
    }
    if (dropped) rehash(capacity_);
  }
  // Calls `visit(entry)` for every entry, in no particular order.
  template <class Visit>
  void for_each(Visit visit) const {
    for (std::size_t i = 0; i < capacity_; ++i) {
      if (slots_[i].key != kEmpty) visit(slots_[i].entry);
    }
  }
  std::size_t size() const { return live_; }
  void clear();

 private:
  // Key 0 marks a free slot; no allocation has it (address 0 is never handed out). A removal
  // moves the entries after it back (linear probing's backward shift) rather than leave a
  // tombstone: a steady state of allocations and frees never has to sweep the table.
  static constexpr uint64_t kEmpty = 0;
  // Only inside remove_if, until its rehash: the name-space bits of a key never make all ones.
  static constexpr uint64_t kDropped = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    Entry entry;
  };
  std::size_t home(uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & (capacity_ - 1);
  }
  // The slot holding `key`, or the free slot where its probe ends.
  std::size_t probe(uint64_t key) const {
    std::size_t i = home(key);
    while (slots_[i].key != kEmpty && slots_[i].key != key) i = (i + 1) & (capacity_ - 1);
    return i;
  }
  void remove_at(std::size_t hole);
  void rehash(std::size_t capacity);

  std::unique_ptr<Slot[]> slots_;
  std::size_t capacity_ = 0;
  std::size_t live_ = 0;
};

struct LiveSizeEntry {
  int device = -1;
  uint32_t context = 0;
  uint64_t size = 0;
};
using LiveSizeTable = LiveTable<LiveSizeEntry>;

template <class E>
bool LiveTable<E>::put(uint64_t key, const Entry& entry, Entry* replaced) {
  if (key == kEmpty || key == kDropped) return false;
  // At most half full, so that probes stay short.
  if ((live_ + 1) * 2 > capacity_) rehash(capacity_ == 0 ? 64 : capacity_ * 2);
  Slot& slot = slots_[probe(key)];
  const bool had = slot.key == key;
  if (had && replaced != nullptr) *replaced = slot.entry;
  if (!had) {
    slot.key = key;
    ++live_;
  }
  slot.entry = entry;
  return had;
}

template <class E>
bool LiveTable<E>::take(uint64_t key, Entry* taken) {
  const std::size_t i = position(key);
  if (i == kNowhere) return false;
  if (taken != nullptr) *taken = slots_[i].entry;
  remove_at(i);
  return true;
}

template <class E>
std::size_t LiveTable<E>::position(uint64_t key) const {
  if (capacity_ == 0 || key == kEmpty || key == kDropped) return kNowhere;
  const std::size_t i = probe(key);
  return slots_[i].key == key ? i : kNowhere;
}

template <class E>
const E* LiveTable<E>::find(uint64_t key) const {
  const std::size_t i = position(key);
  return i == kNowhere ? nullptr : &slots_[i].entry;
}

// Each entry after the hole, up to the next free slot, moves into the hole unless its home lies
// (cyclically) after the hole and at or before the entry: then its probe never passed the hole.
template <class E>
void LiveTable<E>::remove_at(std::size_t hole) {
  const std::size_t mask = capacity_ - 1;
  for (std::size_t i = (hole + 1) & mask; slots_[i].key != kEmpty; i = (i + 1) & mask) {
    const std::size_t h = home(slots_[i].key);
    const bool stays = hole <= i ? (hole < h && h <= i) : (hole < h || h <= i);
    if (stays) continue;
    slots_[hole] = slots_[i];
    hole = i;
  }
  slots_[hole].key = kEmpty;
  --live_;
}

template <class E>
void LiveTable<E>::clear() {
  slots_.reset();
  capacity_ = live_ = 0;
}

template <class E>
void LiveTable<E>::rehash(std::size_t capacity) {
  // Allocated first: if that throws, the table is still whole.
  std::unique_ptr<Slot[]> fresh = std::make_unique<Slot[]>(capacity);
  std::unique_ptr<Slot[]> old = std::exchange(slots_, std::move(fresh));
  const std::size_t old_capacity = capacity_;
  capacity_ = capacity;
  live_ = 0;
  for (std::size_t i = 0; i < old_capacity; ++i) {
    if (old[i].key == kEmpty || old[i].key == kDropped) continue;
    slots_[probe(old[i].key)] = old[i];
    ++live_;
  }
}

}  // namespace gmt::interpose
