// Interns call stacks: each distinct stack is written to the trace once, as a StackRecord, and
// allocations refer to it by id. A repeated stack costs a hash and a lookup.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "interpose/record/trace_writer.h"

namespace gmt::interpose {

class StackTable {
 public:
  explicit StackTable(TraceWriter& writer) : writer_(writer) {}

  // The id of this stack, writing its StackRecord first if it is new: no allocation can name an
  // id before the record that defines it is published. `before_new` runs, without any of our
  // locks held, before a stack is added (to write the modules it needs).
  // `frames` holds `native` native frames, then `python` Python frames (see StackRecord).
  template <class BeforeNew>
  uint32_t intern(const uint64_t* frames, int native, int python, BeforeNew before_new) {
    const int count = native + python;
    if (count <= 0) return 0;
    const uint64_t hash = hash_of(frames, count) ^ static_cast<uint64_t>(native);
    Shard& shard = shards_[hash % kShards];
    {
      std::lock_guard<std::mutex> lock(shard.mutex);
      if (uint32_t id = find_locked(shard, hash, frames, native, count)) return id;
    }
    before_new();
    std::lock_guard<std::mutex> lock(shard.mutex);
    // Raced: another thread added it meanwhile.
    if (uint32_t id = find_locked(shard, hash, frames, native, count)) return id;
    return add_locked(shard, hash, frames, native, count);
  }

  // fork(): all locks are held across it; the child forgets every stack (its trace is new).
  void before_fork();
  void after_fork_in_parent();
  void after_fork_in_child();

 private:
  static constexpr std::size_t kShards = 64;  // threads allocating at once rarely share a lock
  struct Entry {
    uint32_t id;
    int native;
    std::vector<uint64_t> frames;
  };
  struct Shard {
    std::mutex mutex;
    std::unordered_multimap<uint64_t, Entry> entries;
  };

  static uint64_t hash_of(const uint64_t* frames, int count);
  static uint32_t find_locked(Shard& shard, uint64_t hash, const uint64_t* frames, int native,
                              int count);
  uint32_t add_locked(Shard& shard, uint64_t hash, const uint64_t* frames, int native, int count);

  TraceWriter& writer_;
  Shard shards_[kShards];
  std::mutex id_mutex_;
  uint32_t next_id_ = 1;
};

}  // namespace gmt::interpose
