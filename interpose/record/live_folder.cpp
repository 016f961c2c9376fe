// SPDX-License-Identifier: Apache-2.0
#include "interpose/record/live_folder.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <queue>
#include <type_traits>
#include <utility>

#include "format/chunk.h"

namespace gmt::interpose {

namespace {

constexpr std::size_t kStartedRoom = 1024;

}  // namespace

LiveFolder::LiveFolder(uint32_t chunk_size) : chunk_size_(chunk_size) {
  started_.reserve(kStartedRoom);
}

LiveFolder::~LiveFolder() {
  for (auto& [writer, s] : streams_) {
    for (const Chunk& c : s.chunks) munmap(const_cast<uint8_t*>(c.base), chunk_size_);
  }
}

bool LiveFolder::take_started(int fd, std::string& why) {
  for (const Started& st : started_) {
    Stream& s = streams_[st.writer];
    if (st.ended) {
      s.ended = true;
      continue;
    }
    void* map =
        mmap(nullptr, chunk_size_, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(st.offset));
    if (map == MAP_FAILED) {
      why = "cannot map the chunk at byte " + std::to_string(st.offset) +
            " to read it back: " + std::strerror(errno);
      started_.clear();
      return false;
    }
    s.chunks.push_back({static_cast<const uint8_t*>(map), st.offset});
  }
  started_.clear();
  return true;
}

void LiveFolder::read_published(Stream& s) const {
  const Chunk& c = s.chunks.front();
  const uint64_t word = __atomic_load_n(
      reinterpret_cast<const uint64_t*>(c.base + format::ChunkHeaderLayout::kPublished),
      __ATOMIC_ACQUIRE);
  const std::span<const uint8_t> payload(c.base + format::kChunkHeaderSize,
                                         format::published_length(word));
  if (!s.decoder) {
    s.decoder.emplace(payload, c.offset + format::kChunkHeaderSize);
  } else {
    s.decoder->extend(payload);
  }
}

void LiveFolder::drop_front(Stream& s) {
  munmap(const_cast<uint8_t*>(s.chunks.front().base), chunk_size_);
  s.chunks.pop_front();
  s.decoder.reset();  // deltas restart in every chunk
}

// The published length is read again only once the bytes read so far are used up: its word is
// in the cache line the writer's thread stores to with every record, and reading it with every
// record here would take that line from the writer's core each time.
bool LiveFolder::advance(Stream& s, std::string& why) {
  s.has_head = false;
  while (!s.chunks.empty()) {
    if (!s.decoder) read_published(s);
    bool more = s.decoder->next_into(s.head);
    if (!more && s.decoder->status().end == format::StreamEnd::kClean) {
      read_published(s);
      more = s.decoder->next_into(s.head);
    }
    if (more) {
      s.head_ns = s.decoder->last_time();
      s.has_head = true;
      return true;
    }
    const format::StreamStatus& status = s.decoder->status();
    if (status.end != format::StreamEnd::kClean) {
      // Our own bytes, published whole: what cannot be read is damage done to the file.
      why = "the chunk at byte " + std::to_string(s.chunks.front().offset) +
            " cannot be read back: " + status.reason;
      return false;
    }
    const bool left = s.chunks.size() > 1 || s.ended;
    if (!left) return false;  // its writer may publish more
    drop_front(s);
  }
  return false;
}

bool LiveFolder::fold(uint64_t cut_ns, std::string& why) {
  using Head = std::pair<uint64_t, Stream*>;
  const auto later = [](const Head& a, const Head& b) { return a.first > b.first; };
  std::priority_queue<Head, std::vector<Head>, decltype(later)> heads(later);
  for (auto it = streams_.begin(); it != streams_.end();) {
    Stream& s = it->second;
    if (!s.has_head && !advance(s, why) && !why.empty()) return false;
    if (s.has_head && s.head_ns < cut_ns) heads.push({s.head_ns, &s});
    if (!s.has_head && s.chunks.empty() && s.ended) {
      it = streams_.erase(it);
    } else {
      ++it;
    }
  }
  while (!heads.empty()) {
    Stream& s = *heads.top().second;
    heads.pop();
    // The stream's records up to the next stream's head go in one run, without the heap.
    const uint64_t until = heads.empty() ? cut_ns : std::min(cut_ns, heads.top().first + 1);
    do {
      std::visit(
          [this](const auto& r) {
            if constexpr (changes_live_set<std::decay_t<decltype(r)>>()) live_.apply(r);
          },
          s.head);
      ++folded_;
      if (!advance(s, why) && !why.empty()) return false;
    } while (s.has_head && s.head_ns < until);
    if (s.has_head && s.head_ns < cut_ns) heads.push({s.head_ns, &s});
  }
  return true;
}

}  // namespace gmt::interpose
