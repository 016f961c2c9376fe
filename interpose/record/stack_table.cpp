#include "interpose/record/stack_table.h"

#include <algorithm>

namespace gmt::interpose {

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
  id_mutex_.unlock();
  for (Shard& shard : shards_) {
    shard.entries.clear();
    shard.mutex.unlock();
  }
}

}  // namespace gmt::interpose
