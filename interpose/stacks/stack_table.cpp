// SPDX-License-Identifier: Apache-2.0
#include "interpose/stacks/stack_table.h"

#include <algorithm>

#include "interpose/common/instance_id.h"

namespace gmt::interpose {
namespace {

thread_local void* my_cache __attribute__((tls_model("initial-exec"))) = nullptr;

}  // namespace

StackTable::StackTable(TraceWriter& writer) : writer_(writer), id_(new_instance_id()) {
  have_cache_key_ = pthread_key_create(&cache_key_, &StackTable::free_thread_cache) == 0;
}

StackTable::~StackTable() {
  if (have_cache_key_) pthread_key_delete(cache_key_);
}

void StackTable::free_thread_cache(void* cache) {
  if (my_cache == cache) my_cache = nullptr;
  delete static_cast<ThreadCache*>(cache);
}

StackTable::ThreadCache* StackTable::thread_cache() {
  auto* cache = static_cast<ThreadCache*>(my_cache);
  const uint64_t id = id_.load(std::memory_order_acquire);
  if (cache != nullptr && cache->owner == id) [[likely]]
    return cache;
  if (!have_cache_key_) return nullptr;
  if (cache == nullptr) {
    // One per thread: freed when the thread ends, by the table that made it (a thread that
    // uses a second table, in tests only, reuses it).
    cache = new ThreadCache;
    my_cache = cache;
    pthread_setspecific(cache_key_, cache);
  }
  cache->clear();
  cache->owner = id;
  return cache;
}

uint64_t StackTable::hash_of(const uint64_t* frames, int count) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over whole words: stacks are short
  for (int i = 0; i < count; ++i) {
    h ^= frames[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

uint32_t StackTable::find_locked(Shard& shard, uint64_t hash, const uint64_t* frames, int native,
                                 int count) {
  auto [begin, end] = shard.entries.equal_range(hash);
  for (auto it = begin; it != end; ++it) {
    const std::vector<uint64_t>& f = it->second.frames;
    if (it->second.native == native && f.size() == static_cast<std::size_t>(count) &&
        std::equal(f.begin(), f.end(), frames)) {
      return it->second.id;
    }
  }
  return 0;
}

uint32_t StackTable::add_locked(Shard& shard, uint64_t hash, const uint64_t* frames, int native,
                                int count) {
  format::StackRecord rec;
  {
    std::lock_guard<std::mutex> lock(id_mutex_);
    rec.id = next_id_++;
  }
  rec.frames.assign(frames, frames + native);
  rec.python.assign(frames + native, frames + count);
  writer_.record(rec);
  shard.entries.emplace(hash, Entry{rec.id, native, std::vector<uint64_t>(frames, frames + count)});
  return rec.id;
}

void StackTable::before_fork() {
  for (Shard& shard : shards_) shard.mutex.lock();
  id_mutex_.lock();
}

void StackTable::after_fork_in_parent() {
  id_mutex_.unlock();
  for (Shard& shard : shards_) shard.mutex.unlock();
}

void StackTable::after_fork_in_child() {
  next_id_ = 1;
  // A table of its own: the ids this thread has cached are gone.
  id_.store(new_instance_id(), std::memory_order_release);
  id_mutex_.unlock();
  for (Shard& shard : shards_) {
    shard.entries.clear();
    shard.mutex.unlock();
  }
}

}  // namespace gmt::interpose
