// SPDX-License-Identifier: Apache-2.0
// Which chunk of a bounded trace may be written over next. Chunks are reused in the order their
// writers left them, and only once a checkpoint that began after a chunk was left is whole in
// the file: the records it held are then all older than that checkpoint, which carries what
// they left live. Bookkeeping only; the writer does the file's part.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>

namespace gmt::interpose {

class ChunkRing {
 public:
  // A chunk its writer has left for good, holding `records`, while `checkpoints_begun`
  // checkpoints had begun (their ids are 1 .. checkpoints_begun).
  void left(uint64_t offset, uint32_t records, uint32_t checkpoints_begun) {
    left_.push_back({offset, records, checkpoints_begun});
  }

  struct Reuse {
    uint64_t offset;
    uint32_t records;  // records it held, now dropped
    // The oldest checkpoint still valid to start from once this chunk is gone.
    uint32_t valid_from;
  };
  // The oldest chunk left, when checkpoint `newest_whole` (0: none yet) began after it was left,
  // and `keep` more could be taken after it (kept for the checkpoints' own chunks: a checkpoint
  // being written cannot wait for one to be made reusable, it is what makes them so).
  std::optional<Reuse> take(uint32_t newest_whole, std::size_t keep = 0) {
    if (left_.size() <= keep || left_[keep].checkpoints_begun >= newest_whole) return std::nullopt;
    const Left chunk = left_.front();
    left_.pop_front();
    return Reuse{chunk.offset, chunk.records, chunk.checkpoints_begun + 1};
  }

  void clear() { left_.clear(); }

 private:
  struct Left {
    uint64_t offset;
    uint32_t records;
    uint32_t checkpoints_begun;
  };
  std::deque<Left> left_;
};

}  // namespace gmt::interpose
