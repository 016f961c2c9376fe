// A hash map stored in one array (open addressing, linear probing, backward-shift deletion) for
// the replay's per-event lookups: the live allocations above all, one find and one insert or
// erase per allocation event. std::unordered_map allocates a node per entry and chases a pointer
// per lookup; here an entry is found in the cache line its hash points to, nearly always.
//
// Entry pointers stay valid until the next insert (which may grow the array) or erase (which
// may move entries back into the hole).
#pragma once

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

template <class K, class V, class Hash>
class FlatHashMap {
 public:
  struct Entry {
    K key;
    V value;
    bool used = false;
  };

  std::size_t size() const { return size_; }

  Entry* find(const K& key) {
    return const_cast<Entry*>(static_cast<const FlatHashMap*>(this)->find(key));
  }
  const Entry* find(const K& key) const {
    if (size_ == 0) return nullptr;
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      const Entry& e = entries_[i];
      if (!e.used) return nullptr;
      if (e.key == key) return &e;
    }
  }

  // `key` must not be in the map.
  Entry* insert(const K& key, const V& value) {
    if (2 * (size_ + 1) > entries_.size()) grow();  // at most half full: short probe runs
    std::size_t i = home(key);
    while (entries_[i].used) i = (i + 1) & mask_;
    entries_[i] = Entry{key, value, true};
    ++size_;
    return &entries_[i];
  }

  // Removes `entry` (from find or insert) and moves the entries after it that would no longer
  // be reachable back into the hole, so that no tombstones slow later lookups.
  void erase(Entry* entry) {
    std::size_t hole = static_cast<std::size_t>(entry - entries_.data());
    for (std::size_t i = (hole + 1) & mask_; entries_[i].used; i = (i + 1) & mask_) {
      // The entry at i may fill the hole unless its home lies cyclically in (hole, i].
      const std::size_t h = home(entries_[i].key);
      const bool home_after_hole = hole <= i ? (hole < h && h <= i) : (hole < h || h <= i);
      if (home_after_hole) continue;
      entries_[hole] = std::move(entries_[i]);
      hole = i;
    }
    entries_[hole].used = false;
    --size_;
  }

  // Calls f(key, value) for every entry, in no particular order; f must not change the map.
  template <class F>
  void for_each(F&& f) const {
    for (const Entry& e : entries_) {
      if (e.used) f(e.key, e.value);
    }
  }

 private:
  std::size_t home(const K& key) const { return Hash()(key) & mask_; }

  void grow() {
    std::vector<Entry> old = std::move(entries_);
    entries_.assign(old.empty() ? 16 : 2 * old.size(), Entry{});
    mask_ = entries_.size() - 1;
    size_ = 0;
    for (const Entry& e : old) {
      if (e.used) insert(e.key, e.value);
    }
  }

  std::vector<Entry> entries_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace gmt::analyzer
