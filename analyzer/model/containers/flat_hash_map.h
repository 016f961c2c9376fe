// SPDX-License-Identifier: Apache-2.0
// A hash map stored in one array for the replay's per-event lookups: the live allocations above
// all, one find and one insert or erase per allocation event. std::unordered_map allocates a
// node per entry and chases a pointer per lookup; here an entry is found in the cache line its
// hash points to, nearly always.
//
// Open addressing over groups of 8 slots, with a control byte per slot beside the entries (the
// design of Abseil's and Folly's "Swiss" tables, with the bytes of a group compared in one
// 64-bit word rather than with SIMD): a slot is empty, deleted, or holds 7 bits of its key's
// hash. A lookup reads its group's 8 control bytes at once and compares the key only where
// those bits match, so its branches go the same way nearly every time; linear probing's
// per-slot probe loop and backward-shift deletion mispredicted on most events (a fifth of the
// replay's time, measured). An erase moves nothing: it marks the slot empty, or deleted when a
// probe may have passed through its group while it was full; deleted slots are reused by
// inserts and dropped when the array is rebuilt.
//
// A group is the top bits of the hash times a 64-bit odd constant (Fibonacci hashing): one
// multiplication spreads keys that differ only in a few bits (aligned addresses) over the whole
// array, so a hash can be as cheap as the key itself. The bits below pick the control tag and
// the slot a key starts from within its group, so that an entry usually sits where its hash
// points and prefetch() can ask for its line before the control bytes are read.
//
// Entry pointers stay valid until the next insert (which may rebuild the array); an erase moves
// no other entry.
//
// An entry's layout is a parameter: by default the key and the value side by side
// (PlainEntry); a map whose entries can be packed tighter gives its own type, with the same
// entry_key(), set() and clear().
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "analyzer/model/containers/huge_page_allocator.h"

namespace gmt::analyzer {

// Murmur3's 64-bit finalizer: every input bit moves every output bit, so keys that differ only
// in high bits (aligned addresses) still spread over the low bits that pick a slot.
inline uint64_t mix_hash(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

// Loads the cache line at `p` ahead of its use. Not __builtin_prefetch: with it, GCC 12.2 at
// -O2 compiled Replay::prefetch() to a bare `ret` (seen with objdump), silently; an asm
// statement is always kept. A prefetch never faults, whatever the address.
inline void prefetch_line(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

// A device address as its own hash: the map's multiplication spreads aligned addresses.
struct AddressHash {
  std::size_t operator()(uint64_t address) const { return address; }
};
// A key packed from several fields (a site's device and stack...), mixed first: the fields'
// bits all reach the ones the map's multiplication keeps.
struct MixedHash {
  std::size_t operator()(uint64_t key) const { return mix_hash(key); }
};

template <class K, class V>
struct PlainEntry {
  K key;
  V value;

  const K& entry_key() const { return key; }
  void set(const K& k, const V& v) {
    key = k;
    value = v;
  }
  void clear() {}
};

template <class K, class V, class Hash, class E = PlainEntry<K, V>>
class FlatHashMap {
 public:
  using Entry = E;

  std::size_t size() const { return size_; }
  // The bytes of the arrays the entries and their control bytes are in.
  std::size_t footprint() const {
    return entries_.size() * sizeof(Entry) + control_.size() * sizeof(uint64_t);
  }

  Entry* find(const K& key) {
    return const_cast<Entry*>(static_cast<const FlatHashMap*>(this)->find(key));
  }
  const Entry* find(const K& key) const {
    if (size_ == 0) return nullptr;
    const Probe probe = probe_of(key);
    for (std::size_t group = probe.group;; group = (group + 1) & group_mask_) {
      const uint64_t control = control_[group];
      for (uint64_t m = matching(control, probe.tag); m != 0; m &= m - 1) {
        const Entry& e = entries_[slot_in(group, m)];
        if (e.entry_key() == key) return &e;
      }
      if (empty_bytes(control) != 0) return nullptr;
    }
  }

  // `key` must not be in the map.
  Entry* insert(const K& key, const V& value) {
    make_room();
    return &place(probe_of(key), key, value);
  }

  // Asks the memory for the line of the entry `key` would sit in where its hash points (and its
  // group's control bytes), for a lookup to come: a map larger than the caches costs a miss per
  // lookup, which this hides when asked early.
  void prefetch(const K& key) const {
    if (entries_.empty()) return;
    const Probe probe = probe_of(key);
    prefetch_line(&control_[probe.group]);
    prefetch_line(&entries_[probe.group * kGroup + probe.start]);
  }

  // Inserts `key` unless it is already in the map: the entry and true when it was added, the
  // entry already there (unchanged) and false when not.
  std::pair<Entry*, bool> try_insert(const K& key, const V& value) {
    make_room();
    const Probe probe = probe_of(key);
    for (std::size_t group = probe.group;; group = (group + 1) & group_mask_) {
      const uint64_t control = control_[group];
      for (uint64_t m = matching(control, probe.tag); m != 0; m &= m - 1) {
        Entry& e = entries_[slot_in(group, m)];
        if (e.entry_key() == key) return {&e, false};
      }
      if (empty_bytes(control) != 0) break;
    }
    return {&place(probe, key, value), true};
  }

  // Removes `entry` (from find or insert). No other entry moves.
  void erase(Entry* entry) {
    const auto slot = static_cast<std::size_t>(entry - entries_.data());
    const std::size_t group = slot / kGroup;
    // A group that has an empty slot has never been full since the array was built (a slot
    // emptied here would otherwise leave keys placed past it unreachable), so no probe ever
    // went on past it: the slot can be empty again. Otherwise it stays in the way.
    const bool reachable_past = empty_bytes(control_[group]) == 0;
    set_control(slot, reachable_past ? kDeleted : kEmpty);
    deleted_ += reachable_past ? 1 : 0;
    entry->clear();
    --size_;
  }

  // Calls f(entry) for every entry, in no particular order; f must not change the map.
  template <class F>
  void for_each_entry(F&& f) const {
    for (std::size_t slot = 0; slot < entries_.size(); ++slot) {
      if (full(control_byte(slot))) f(entries_[slot]);
    }
  }
  // Calls f(key, value) for every entry of a PlainEntry map.
  template <class F>
  void for_each(F&& f) const {
    for_each_entry([&](const Entry& e) { f(e.key, e.value); });
  }

 private:
  static constexpr std::size_t kGroup = 8;  // slots per control word
  static constexpr uint64_t kLows = 0x0101010101010101ull;
  static constexpr uint64_t kHighs = 0x8080808080808080ull;
  static constexpr uint8_t kEmpty = 0x80;
  static constexpr uint8_t kDeleted = 0xfe;  // a full slot's byte is its tag, 0 to 0x7f

  struct Probe {
    std::size_t group;
    std::size_t start;  // the slot within the group the key starts from
    uint8_t tag;
  };
  Probe probe_of(const K& key) const {
    const uint64_t h = static_cast<uint64_t>(Hash()(key)) * 0x9e3779b97f4a7c15ull;
    return Probe{static_cast<std::size_t>(h >> group_shift_),
                 static_cast<std::size_t>(h >> (group_shift_ - 3)) & (kGroup - 1),
                 static_cast<uint8_t>((h >> (group_shift_ - 10)) & 0x7f)};
  }

  // The high bit of each byte of `control` equal to `tag`; a byte after an equal one may be
  // flagged too (the caller compares keys). Empty and deleted bytes never are.
  static uint64_t matching(uint64_t control, uint8_t tag) {
    const uint64_t x = control ^ (kLows * tag);
    return (x - kLows) & ~x & kHighs;
  }
  // The high bit of each empty byte: bit 7 set and bit 1 clear (a deleted byte has bit 1 set).
  static uint64_t empty_bytes(uint64_t control) { return control & ~(control << 6) & kHighs; }
  // The high bit of each empty or deleted byte: bit 7 set and bit 0 clear.
  static uint64_t free_bytes(uint64_t control) { return control & ~(control << 7) & kHighs; }
  static bool full(uint8_t byte) { return byte < 0x80; }
  static std::size_t slot_in(std::size_t group, uint64_t high_bits) {
    return group * kGroup + static_cast<std::size_t>(std::countr_zero(high_bits)) / 8;
  }

  using ControlWords = std::vector<uint64_t, HugePageAllocator<uint64_t>>;
  static uint8_t byte_at(const ControlWords& control, std::size_t slot) {
    return static_cast<uint8_t>(control[slot / kGroup] >> (slot % kGroup * 8));
  }
  uint8_t control_byte(std::size_t slot) const { return byte_at(control_, slot); }
  void set_control(std::size_t slot, uint8_t byte) {
    uint64_t& word = control_[slot / kGroup];
    const unsigned shift = slot % kGroup * 8;
    word = (word & ~(uint64_t{0xff} << shift)) | uint64_t{byte} << shift;
  }

  // The first empty or deleted slot along the probe: in the first group that has one, the
  // first at or after the probe's start, wrapping within the group.
  std::size_t free_slot(const Probe& probe) const {
    std::size_t group = probe.group;
    uint64_t free = free_bytes(control_[group]);
    while (free == 0) {
      group = (group + 1) & group_mask_;
      free = free_bytes(control_[group]);
    }
    const unsigned start = static_cast<unsigned>(probe.start) * 8;
    const auto first =
        static_cast<unsigned>(std::countr_zero(std::rotr(free, static_cast<int>(start))));
    return group * kGroup + (first + start) / 8 % kGroup;
  }

  // Takes free_slot() for the probe's key: its entry is the caller's to fill.
  std::size_t claim(const Probe& probe) {
    const std::size_t slot = free_slot(probe);
    if (control_byte(slot) == kDeleted) --deleted_;
    set_control(slot, probe.tag);
    ++size_;
    return slot;
  }

  // The key's entry, in free_slot(). The caller has made room.
  Entry& place(const Probe& probe, const K& key, const V& value) {
    Entry& e = entries_[claim(probe)];
    e.set(key, value);
    return e;
  }

  // At most half the slots taken (entries and deleted ones together): short probes. When the
  // deleted ones are what fills it, the array is rebuilt at the same size.
  void make_room() {
    if (2 * (size_ + deleted_ + 1) <= entries_.size()) return;
    const bool mostly_deleted = 4 * (size_ + 1) <= entries_.size();
    rebuild(entries_.empty() ? 2 * kGroup : mostly_deleted ? entries_.size() : 2 * entries_.size());
  }

  void rebuild(std::size_t slots) {
    auto old_entries = std::move(entries_);
    auto old_control = std::move(control_);
    entries_.assign(slots, Entry{});
    control_.assign(slots / kGroup, kLows * kEmpty);
    group_mask_ = slots / kGroup - 1;
    group_shift_ = 64 - std::countr_zero(slots / kGroup);
    size_ = 0;
    deleted_ = 0;
    for (std::size_t slot = 0; slot < old_entries.size(); ++slot) {
      if (!full(byte_at(old_control, slot))) continue;
      const Entry& e = old_entries[slot];
      entries_[claim(probe_of(e.entry_key()))] = e;
    }
  }

  std::vector<Entry, HugePageAllocator<Entry>> entries_;
  ControlWords control_;  // a word of control bytes per group of 8 slots
  std::size_t group_mask_ = 0;
  int group_shift_ = 64;
  std::size_t size_ = 0;
  std::size_t deleted_ = 0;
};

}  // namespace gmt::analyzer
