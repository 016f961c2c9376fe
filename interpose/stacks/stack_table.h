// SPDX-License-Identifier: Apache-2.0
// Interns call stacks: each distinct stack is written to the trace once, as a StackRecord, and
// allocations refer to it by id. A repeated stack costs a hash and a lookup: first in a cache
// of the calling thread's own (no lock), then in the shared table (a lock per shard). Many
// threads allocating from one call site all want that site's shard: on 16 cores, the shard's
// lock alone made each of 16 threads spend 15 times one thread's CPU per event.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "interpose/record/trace_writer.h"

namespace gmt::interpose {

class StackTable {
 public:
  explicit StackTable(TraceWriter& writer);
  // The runtime's is never destroyed; tests' are, with no thread using them any more.
  ~StackTable();
  StackTable(const StackTable&) = delete;
  StackTable& operator=(const StackTable&) = delete;

  // The id of this stack, writing its StackRecord first if it is new: no allocation can name an
  // id before the record that defines it is published. `before_new` runs, without any of our
  // locks held, before a stack is added (to write the modules it needs).
  // `frames` holds `native` native frames, then `python` Python frames (see StackRecord).
  template <class BeforeNew>
  uint32_t intern(const uint64_t* frames, int native, int python, BeforeNew before_new) {
    const int count = native + python;
    if (count <= 0) return 0;
    const uint64_t hash = hash_of(frames, count) ^ static_cast<uint64_t>(native);
    ThreadCache* cache = thread_cache();
    if (cache != nullptr) [[likely]] {
      if (uint32_t id = cache->find(hash, frames, native, count)) [[likely]]
        return id;
    }
    return intern_missed(cache, hash, frames, native, count, before_new);
  }

  // fork(): all locks are held across it; the child forgets every stack (its trace is new).
  void before_fork();
  void after_fork_in_parent();
  void after_fork_in_child();

 private:
  // A thread's most recent stacks, by hash: hits need no lock and touch no shared memory.
  // A PyTorch block's stack has 30 to 60 frames, native and Python together, and a training
  // step allocates from a hundred sites or more in turn: the cache holds 256 stacks, four to a
  // set, their frames in one arena (about 140 KiB per thread), emptied when it is full. Stacks of
  // more than kFrames frames are not cached.
  struct ThreadCache {
    static constexpr std::size_t kSets = 64;
    static constexpr std::size_t kWays = 4;
    static constexpr int kFrames = 128;  // GPUMEMTRACE_STACK_DEPTH's default, twice
    static constexpr std::size_t kArenaFrames = 16384;
    struct Entry {
      uint64_t hash = 0;
      uint32_t id = 0;     // 0: empty
      uint32_t first = 0;  // its frames in the arena
      uint16_t native = 0;
      uint16_t count = 0;
    };
    uint64_t owner = 0;  // the StackTable's id when filled
    Entry entries[kSets][kWays];
    uint8_t next_way[kSets] = {};  // the way the set's next stack replaces
    uint32_t used = 0;             // arena frames in use
    uint64_t arena[kArenaFrames];

    uint32_t find(uint64_t hash, const uint64_t* frames, int native, int count) const {
      for (const Entry& e : entries[hash % kSets]) {
        if (e.id != 0 && e.hash == hash && e.native == native && e.count == count &&
            std::memcmp(arena + e.first, frames,
                        sizeof(uint64_t) * static_cast<std::size_t>(count)) == 0)
          return e.id;
      }
      return 0;
    }
    void remember(uint64_t hash, const uint64_t* frames, int native, int count, uint32_t id) {
      if (count > kFrames || id == 0) return;
      if (used + static_cast<uint32_t>(count) > kArenaFrames) clear();
      const std::size_t set = hash % kSets;
      Entry& e = entries[set][next_way[set]];
      next_way[set] = static_cast<uint8_t>((next_way[set] + 1) % kWays);
      e = Entry{hash, id, used, static_cast<uint16_t>(native), static_cast<uint16_t>(count)};
      std::memcpy(arena + used, frames, sizeof(uint64_t) * static_cast<std::size_t>(count));
      used += static_cast<uint32_t>(count);
    }
    void clear() {
      for (auto& set : entries) {
        for (Entry& e : set) e.id = 0;
      }
      used = 0;
    }
  };
  // The calling thread's cache, emptied if it was filled for another table (or this one before a
  // fork); nullptr where one cannot be made.
  ThreadCache* thread_cache();
  static void free_thread_cache(void* cache);

  // A stack the thread's cache does not hold: from the shared table, then into the cache. Out
  // of line: a training loop's stacks are nearly all in the cache, and this code would only
  // spread the hit's over more lines of a cold instruction cache.
  template <class BeforeNew>
  __attribute__((noinline)) uint32_t intern_missed(ThreadCache* cache, uint64_t hash,
                                                   const uint64_t* frames, int native, int count,
                                                   BeforeNew before_new) {
    const uint32_t id = intern_shared(hash, frames, native, count, before_new);
    if (cache != nullptr) cache->remember(hash, frames, native, count, id);
    return id;
  }

  template <class BeforeNew>
  uint32_t intern_shared(uint64_t hash, const uint64_t* frames, int native, int count,
                         BeforeNew before_new) {
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
  // Which table a thread's cache was filled for; the child of a fork, which forgets every
  // stack, takes a new one.
  std::atomic<uint64_t> id_;
  pthread_key_t cache_key_{};  // frees a thread's cache when it ends
  bool have_cache_key_ = false;
};

}  // namespace gmt::interpose
