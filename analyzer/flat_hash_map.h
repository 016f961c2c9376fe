// A hash map stored in one array (open addressing, linear probing, backward-shift deletion) for
// the replay's per-event lookups: the live allocations above all, one find and one insert or
// erase per allocation event. std::unordered_map allocates a node per entry and chases a pointer
// per lookup; here an entry is found in the cache line its hash points to, nearly always.
//
// Entry pointers stay valid until the next insert (which may grow the array) or erase (which
// may move entries back into the hole).
//
// A slot is the top bits of the hash times a 64-bit odd constant (Fibonacci hashing): one
// multiplication spreads keys that differ only in a few bits (aligned addresses) over the
// whole array, so a hash can be as cheap as the key itself.
//
// An entry's layout is a parameter: by default the key, the value and a flag side by side
// (PlainEntry); a map whose entries can be packed tighter gives its own type, with the same
// used(), entry_key(), set() and clear().
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

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

template <class K, class V>
struct PlainEntry {
  K key;
  V value;
  bool in_use = false;

  bool used() const { return in_use; }
  const K& entry_key() const { return key; }
  void set(const K& k, const V& v) {
    key = k;
    value = v;
    in_use = true;
  }
  void clear() { in_use = false; }
};

template <class K, class V, class Hash, class E = PlainEntry<K, V>>
class FlatHashMap {
 public:
  using Entry = E;

  std::size_t size() const { return size_; }
  // The bytes of the array the entries are in.
  std::size_t footprint() const { return entries_.size() * sizeof(Entry); }

  Entry* find(const K& key) {
    return const_cast<Entry*>(static_cast<const FlatHashMap*>(this)->find(key));
  }
  const Entry* find(const K& key) const {
    if (size_ == 0) return nullptr;
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      const Entry& e = entries_[i];
      if (!e.used()) return nullptr;
      if (e.entry_key() == key) return &e;
    }
  }

  // `key` must not be in the map.
  Entry* insert(const K& key, const V& value) {
    if (2 * (size_ + 1) > entries_.size()) grow();  // at most half full: short probe runs
    Entry& e = free_slot_for(key);
    e.set(key, value);
    ++size_;
    return &e;
  }

  // Asks the memory for the cache line where `key`'s probe starts, and the one after (where
  // probe runs and an erase's moves often go on), for a lookup to come: a map larger than the
  // caches costs a miss per lookup, which this hides when asked early.
  void prefetch(const K& key) const {
    if (entries_.empty()) return;
    const std::size_t i = home(key);
    prefetch_line(&entries_[i]);
    constexpr std::size_t kPerLine = sizeof(Entry) < 64 ? 64 / sizeof(Entry) : 1;
    prefetch_line(&entries_[(i + kPerLine) & mask_]);
  }

  // Inserts `key` unless it is already in the map, in one probe run: the entry and true when
  // it was added, the entry already there (unchanged) and false when not.
  std::pair<Entry*, bool> try_insert(const K& key, const V& value) {
    if (2 * (size_ + 1) > entries_.size()) grow();
    std::size_t i = home(key);
    for (; entries_[i].used(); i = (i + 1) & mask_) {
      if (entries_[i].entry_key() == key) return {&entries_[i], false};
    }
    entries_[i].set(key, value);
    ++size_;
    return {&entries_[i], true};
  }

  // Removes `entry` (from find or insert) and moves the entries after it that would no longer
  // be reachable back into the hole, so that no tombstones slow later lookups.
  void erase(Entry* entry) {
    std::size_t hole = static_cast<std::size_t>(entry - entries_.data());
    for (std::size_t i = (hole + 1) & mask_; entries_[i].used(); i = (i + 1) & mask_) {
      // The entry at i may fill the hole unless its home lies cyclically in (hole, i].
      const std::size_t h = home(entries_[i].entry_key());
      const bool home_after_hole = hole <= i ? (hole < h && h <= i) : (hole < h || h <= i);
      if (home_after_hole) continue;
      entries_[hole] = std::move(entries_[i]);
      hole = i;
    }
    entries_[hole].clear();
    --size_;
  }

  // Calls f(entry) for every entry, in no particular order; f must not change the map.
  template <class F>
  void for_each_entry(F&& f) const {
    for (const Entry& e : entries_) {
      if (e.used()) f(e);
    }
  }
  // Calls f(key, value) for every entry of a PlainEntry map.
  template <class F>
  void for_each(F&& f) const {
    for_each_entry([&](const Entry& e) { f(e.key, e.value); });
  }

 private:
  std::size_t home(const K& key) const {
    return static_cast<std::size_t>((Hash()(key) * 0x9e3779b97f4a7c15ull) >> shift_);
  }

  // The first unused slot of the probe run that starts at `key`'s home.
  Entry& free_slot_for(const K& key) {
    std::size_t i = home(key);
    while (entries_[i].used()) i = (i + 1) & mask_;
    return entries_[i];
  }

  void grow() {
    std::vector<Entry> old = std::move(entries_);
    entries_.assign(old.empty() ? 16 : 2 * old.size(), Entry{});
    mask_ = entries_.size() - 1;
    shift_ = 64 - std::countr_zero(entries_.size());
    size_ = 0;
    for (const Entry& e : old) {
      if (!e.used()) continue;
      free_slot_for(e.entry_key()) = e;
      ++size_;
    }
  }

  std::vector<Entry> entries_;
  std::size_t mask_ = 0;
  int shift_ = 64;
  std::size_t size_ = 0;
};

}  // namespace gmt::analyzer
