// SPDX-License-Identifier: Apache-2.0
#include "interpose/stacks/stack_table.h"

#include <algorithm>

#include "format/hot_path.h"
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

GMT_HOT_PATH StackTable::ThreadCache* StackTable::thread_cache() {
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

GMT_HOT_PATH uint64_t StackTable::hash_of(const uint64_t* frames, int count) {
  // FNV-1a over whole words (stacks are short), in four lanes kept in registers: a PyTorch
  // block's 40 frames in one lane were a chain of 40 dependent multiplications, 50 ns of every
  // stack taken.
  constexpr uint64_t kPrime = 0x100000001b3ull;
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull, c = 0x9ce484222325cbf2ull,
           d = 0x2325cbf29ce48422ull;
  int i = 0;
  for (; i + 4 <= count; i += 4) {
    a = (a ^ frames[i]) * kPrime;
    b = (b ^ frames[i + 1]) * kPrime;
    c = (c ^ frames[i + 2]) * kPrime;
    d = (d ^ frames[i + 3]) * kPrime;
  }
  if (i < count) a = (a ^ frames[i++]) * kPrime;
  if (i < count) b = (b ^ frames[i++]) * kPrime;
  if (i < count) c = (c ^ frames[i]) * kPrime;
  // Mixed down so that the low bits, which pick a set, depend on every lane.
  uint64_t h = a;
  h = (h ^ (h >> 31) ^ b) * kPrime;
  h = (h ^ (h >> 31) ^ c) * kPrime;
  h = (h ^ (h >> 31) ^ d) * kPrime;
  return h ^ (h >> 29);
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
