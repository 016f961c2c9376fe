// SPDX-License-Identifier: Apache-2.0
// Appends records to this process's trace file, created on the first record so that a process
// that never uses CUDA leaves nothing behind.
//
// The file is made of fixed-size chunks (format/chunk.h), each owned by one thread and mapped
// MAP_SHARED: a hook encodes its record straight into its thread's chunk and publishes the new
// length and checksum with one store. No lock, no system call on the way. The bytes are in the
// page cache the moment they are published, so everything a hook recorded survives SIGKILL, a
// crash or _exit without any signal handler; only finding a new chunk takes a lock.
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "format/record_encoder.h"
#include "format/records.h"
#include "interpose/common/clock.h"
#include "interpose/config.h"

namespace gmt::interpose {

// A thread's place in its current chunk. Lives in thread-local storage.
struct TraceChunkCursor {
  uint8_t* base = nullptr;  // the chunk's first byte (its header)
  uint32_t used = 0;        // payload bytes published
  uint32_t crc = 0;         // CRC-32 of those bytes
  uint32_t records = 0;     // records in those bytes
  uint32_t generation = 0;  // the file it belongs to; stale after fork or a new file
  uint32_t sequence = 0;    // this writer's chunk number
  uint32_t writer = 0;
  format::CodecState codec;  // deltas restart in every chunk, which is read on its own
};

class TraceWriter {
 public:
  static constexpr uint32_t kChunkSize = 64 * 1024;

  explicit TraceWriter(const Config& config);
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Whether this process's trace file exists (the first record was written).
  bool started() const { return started_.load(std::memory_order_acquire); }

  // Stamps the record's time and appends it to the calling thread's chunk.
  template <class R>
  void record(R& rec) {
    constexpr std::size_t kMaxBytes = format::max_record_bytes<R>();
    ThreadChunk& chunk = thread_chunk();
    if (!usable(chunk, kMaxBytes) && !attach(chunk, kMaxBytes)) return;
    rec.time_ns = now_ns();
    if constexpr (format::encodes_in_place<R>()) {
      // Events: encoded in place, past the published bytes, then published.
      uint8_t* at = chunk.base + kChunkHeader + chunk.used;
      const std::size_t size = format::encode_record_at(rec, chunk.codec, at);
      if (size != 0) publish(chunk, at, size);
    } else {
      format::FixedBuffer<kMaxBytes> frame;
      format::encode_record(rec, chunk.codec, frame);
      if (!frame.overflowed()) append(chunk, frame.data(), frame.size());
    }
  }

  // Marks a normal exit. Only if a trace was started: exiting creates no file.
  void finish();

  // fork(): the child must write none of the parent's chunks, and starts its own file.
  void before_fork() { mutex_.lock(); }
  void after_fork_in_parent() { mutex_.unlock(); }
  void after_fork_in_child();

  // The file being written, empty before the first record.
  std::string path() const;

 private:
  using ThreadChunk = TraceChunkCursor;

  bool usable(const ThreadChunk& chunk, std::size_t bytes) const {
    return chunk.base != nullptr &&
           chunk.generation == generation_.load(std::memory_order_acquire) &&
           chunk.used + bytes <= kChunkSize - kChunkHeader;
  }
  uint64_t now_ns() const {
    const uint64_t now = monotonic_ns();
    return now > mono_start_ns_ ? now - mono_start_ns_ : 0;
  }
  bool attach(ThreadChunk& chunk, std::size_t bytes);
  void append(ThreadChunk& chunk, const uint8_t* bytes, std::size_t size);
  // Publishes `size` bytes already written at the end of the chunk's payload.
  void publish(ThreadChunk& chunk, const uint8_t* bytes, std::size_t size);
  bool ensure_open_locked();
  bool create_file_locked(const std::string& path);
  bool new_chunk_locked(ThreadChunk& chunk);
  void write_process_info_locked(ThreadChunk& chunk);
  void write_thread_locked(ThreadChunk& chunk);
  // Writes the chunk's record count into its header (format 4.1): when its thread leaves it.
  static void seal(ThreadChunk& chunk);
  void unmap_locked(uint8_t* base);
  // A thread that ends gives its chunk's mapping back (its records stay in the file).
  static void on_thread_exit(void* writer);
  void give_up_locked(const std::string& why);

  static constexpr uint32_t kChunkHeader = 32;
  static thread_local ThreadChunk thread_chunk_ __attribute__((tls_model("initial-exec")));
  // The calling thread's cursor. Under the sanitizers it comes from a call: GCC's null check of
  // a thread_local's address branches on the flags of an `add x@gottpoff(%rip)`, which the linker
  // rewrites into a flag-less `lea` when this code is linked into an executable (the unit
  // tests), so the check fires on a branch that reads stale flags.
  static ThreadChunk& thread_chunk() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return thread_chunk_out_of_line();
#else
    return thread_chunk_;
#endif
  }
  static ThreadChunk& thread_chunk_out_of_line();

  const Config& config_;
  mutable std::mutex mutex_;
  std::atomic<uint32_t> generation_;
  std::atomic<bool> started_{false};
  int fd_ = -1;
  bool disabled_ = false;  // creating or growing the file failed: the program runs on untraced
  std::string path_;
  uint64_t mono_start_ns_ = 0;
  uint64_t file_size_ = 0;    // bytes reserved on disk
  uint64_t next_offset_ = 0;  // where the next chunk goes
  uint32_t next_writer_ = 0;
  std::vector<void*> mapped_;  // the chunks mapped now: one per live writing thread
  pthread_key_t thread_exit_key_{};
  bool have_thread_exit_key_ = false;
};

}  // namespace gmt::interpose
