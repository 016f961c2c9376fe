// SPDX-License-Identifier: Apache-2.0
// A bounded trace's live set, kept off the hooks' path: the records the threads have already
// published are read back from their chunks and folded into one LiveSet, in time order, up to a
// cut time. The hooks only write, as in an unbounded trace; the folding costs the checkpoint
// thread (TraceWriter), not the program's threads.
//
// Each writer's records are in time order in its chunks, one chunk after another: the folder
// keeps a stream per writer (its chunks not yet read through, a decoder in the first) and merges
// the streams by time. A stream's next record at or after the cut waits for the next fold.
//
// The writer tells it of each chunk a thread starts and of each thread that ends, under the
// writer's lock; fold() runs without it, on the one thread that folds. What the writer told since
// the last fold is taken over by take_started(), again under the lock.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "format/record_decoder.h"
#include "format/records.h"
#include "interpose/record/live_set.h"

namespace gmt::interpose {

class LiveFolder {
 public:
  // `chunk_size`: the trace's chunk size, what each chunk's mapping spans.
  explicit LiveFolder(uint32_t chunk_size);
  ~LiveFolder();
  LiveFolder(const LiveFolder&) = delete;
  LiveFolder& operator=(const LiveFolder&) = delete;

  // Under the writer's lock. A chunk that writer `writer` starts, at `offset` in the file; its
  // earlier chunk, if any, is left for good. Never allocates until the room kept for it is used
  // (a chunk may be started in a signal handler's hook).
  void chunk_started(uint32_t writer, uint64_t offset) {
    started_.push_back({writer, offset, false});
  }
  // Under the writer's lock: the writer's thread ended, and its last chunk is left for good.
  void writer_ended(uint32_t writer) { started_.push_back({writer, 0, true}); }
  // Under the writer's lock, with the trace's descriptor: maps the chunks started since the last
  // call (read-only) and hands them to the streams. False, with the reason, if one cannot be
  // mapped.
  bool take_started(int fd, std::string& why);

  // Without the writer's lock, on the folding thread, once every record stamped before `cut_ns`
  // is published: applies each of them, in time order, to the live set. False, with the reason,
  // if a chunk's bytes cannot be read back (the live set is then no longer known).
  bool fold(uint64_t cut_ns, std::string& why);

  const LiveSet& live() const { return live_; }
  // Records folded in all (for the benchmarks and tests).
  uint64_t folded() const { return folded_; }

 private:
  struct Started {
    uint32_t writer;
    uint64_t offset;
    bool ended;
  };
  struct Chunk {
    const uint8_t* base;  // mapped read-only, chunk_size bytes
    uint64_t offset;
  };
  struct Stream {
    std::deque<Chunk> chunks;  // all but the last are left for good; the last too once `ended`
    bool ended = false;
    std::optional<format::RecordDecoder> decoder;  // over chunks.front()'s published bytes
    format::Record head;                           // the next record, decoded, when `has_head`
    uint64_t head_ns = 0;
    bool has_head = false;
  };

  // The stream's next record into its head, when one is published: false when none is (yet).
  bool advance(Stream& s, std::string& why);
  // Points the decoder at the front chunk's published bytes, all of them so far.
  void read_published(Stream& s) const;
  void drop_front(Stream& s);

  std::vector<Started> started_;
  std::map<uint32_t, Stream> streams_;
  const uint32_t chunk_size_;
  LiveSet live_;
  uint64_t folded_ = 0;
};

}  // namespace gmt::interpose
