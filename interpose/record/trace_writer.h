// SPDX-License-Identifier: Apache-2.0
// Appends records to this process's trace file, created on the first record so that a process
// that never uses CUDA leaves nothing behind.
//
// The file is made of fixed-size chunks (format/chunk.h), each owned by one thread and mapped
// MAP_SHARED: a hook encodes its record straight into its thread's chunk and publishes the new
// length and checksum with one store. No lock, no system call on the way. The bytes are in the
// page cache the moment they are published, so everything a hook recorded survives SIGKILL, a
// crash or _exit without any signal handler; only finding a new chunk takes a lock.
//
// The program is never harmed by it: the descriptor lives above the numbers programs use, is
// closed on exec, and is checked to still be the trace's (device and inode) each time it is used,
// which is only when a chunk is added; writes never pass the file-size limit (no SIGXFSZ); a
// full disk gets a smaller last growth. When recording cannot go on, it stops: a note in the
// trace and the header page say why, and the program runs on untraced.
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "format/record_encoder.h"
#include "format/records.h"
#include "interpose/common/clock.h"
#include "interpose/config.h"
#include "interpose/record/chunk_ring.h"
#include "interpose/record/live_folder.h"

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
  uint64_t offset = 0;       // of the chunk in the file
  format::CodecState codec;  // deltas restart in every chunk, which is read on its own
  // Set while this thread is inside the writer: a hook that a signal handler enters then
  // records nothing (it would write over the bytes being written, or wait on a lock this
  // thread holds); it is counted, and the count written as a note once the thread is out.
  bool busy = false;
  uint32_t dropped = 0;
  // 1 from just before a record's time is read until the record is published: a bounded trace's
  // checkpoint thread waits for it to be 0 before it reads the records older than its cut.
  // Written with plain atomic stores by this thread only (read through TraceWriter::writing_).
  uint32_t in_flight = 0;
  // A recorder's own thread (the sampler, the checkpoint thread), which opens no descriptor.
  bool opens_nothing = false;
  // Bounded traces: the generation in which this thread writes into the writer's shared chunk,
  // having none of its own (TraceWriter::write_shared), and the one in which its Thread record
  // was written (the definitions hold it once, whichever chunks the thread writes).
  uint32_t sharing = 0;
  uint32_t named = 0;
  // The caching allocator's free request this thread wrote last, and `end`, `used` just after
  // it (0: none). Only while `end` is still `used` (no record after it in this chunk) is a
  // completed free of the same block written as the two bytes of a BlockFreedAtOnce record
  // (format 4.7).
  struct LastRequest {
    uint32_t end = 0;
    uint32_t allocator = 0;
    int32_t device = 0;
    uint64_t address = 0;
    uint64_t size = 0;
    uint64_t stream = 0;
  } request;
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
    ThreadChunk& chunk = thread_chunk();
    if (chunk.busy) [[unlikely]] {
      ++chunk.dropped;  // a signal handler's hook, while this thread is in here
      return;
    }
    Busy busy(chunk);
    if constexpr (std::is_same_v<R, format::BlockRecord>) {
      write_block(chunk, rec);
    } else {
      write(chunk, rec);
    }
    if (chunk.dropped != 0) [[unlikely]]
      note_dropped(chunk);
    if (spare_taken_.load(std::memory_order_relaxed)) [[unlikely]]
      refill_spare(chunk);
  }

  // From a signal handler that ends the process (a SignalRecord): the record goes into the
  // calling thread's chunk, the room kept for the stop note included, when the thread holds one;
  // else nothing is written. No lock, no allocation, no new chunk: the signal may have come
  // inside malloc or under the writer's lock. True when written.
  template <class R>
  bool record_from_handler(R& rec) {
    ThreadChunk& chunk = thread_chunk();
    if (chunk.busy || !started() || sharing(chunk) || chunk.base == nullptr ||
        chunk.generation != generation_.load(std::memory_order_acquire) ||
        chunk.used + format::max_record_bytes<R>() > kChunkSize - kChunkHeader) {
      return false;
    }
    Busy busy(chunk);
    return write_at(chunk, rec);
  }

  // Marks a normal exit. Only if a trace was started: exiting creates no file.
  void finish();

  // exec: before the real call, the trace is marked as ended by exec of `program` (the end of
  // this process's recording, as far as the trace can tell); if the call returns, it failed and
  // recording goes on, with a note that says so. Nothing in a vfork child, whose memory is its
  // parent's, nor before the trace exists.
  void exec_starting(const char* program);
  void exec_failed(int error);

  // fork(): the child must write none of the parent's chunks, and starts its own file.
  void before_fork();
  void after_fork_in_parent();
  void after_fork_in_child();

  // The file being written, empty before the first record.
  std::string path() const;

  // The calling thread is one of the recorder's own: it never opens a descriptor, not even the
  // trace file again after the program closed it. Another thread's open would take the lowest
  // free number, which the program's next open of its own then does not get. Where the program
  // closed the trace's descriptor, such a thread takes the spare chunk instead.
  static void this_thread_opens_nothing();
  // From a program's thread, inside the recorder (which may open the file again): maps a spare
  // chunk for the recorder's threads if there is none, and keeps one from now on.
  void keep_spare_chunk();

  // Room kept at the end of every chunk for the note that says why recording stopped.
  static constexpr uint32_t kStopNoteRoom = 256;

 private:
  using ThreadChunk = TraceChunkCursor;

  // Marks the thread as inside the writer (ThreadChunk::busy) for a scope. The signal fences
  // keep the compiler from moving the flag's stores past the writes it guards: a handler runs
  // on this thread, between any two instructions.
  class Busy {
   public:
    explicit Busy(ThreadChunk& chunk) : chunk_(chunk) {
      chunk_.busy = true;
      std::atomic_signal_fence(std::memory_order_seq_cst);
    }
    ~Busy() {
      std::atomic_signal_fence(std::memory_order_seq_cst);
      chunk_.busy = false;
    }
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;

   private:
    ThreadChunk& chunk_;
  };

  // Who writes a chunk: a thread, or (bounded traces) the writer itself, for the definitions it
  // keeps in chunks never reused, for checkpoints, and for the threads' records past the chunks
  // a bounded trace lets threads hold (kShared: several threads, one at a time).
  // How many checkpoints a writer that needs a chunk past the limit waits for, before the file
  // grows past its limit.
  static constexpr int kCheckpointsBeforeGrowing = 4;
  enum class ChunkRole : uint8_t { kThread, kDefinitions, kCheckpoints, kShared };
  // Whether the chunk holds the program's events: the history that reuse drops and checkpoints
  // carry.
  static bool holds_events(ChunkRole role) {
    return role == ChunkRole::kThread || role == ChunkRole::kShared;
  }

  // Marks the thread's record as in flight (TraceChunkCursor::in_flight) from before its time is
  // read until it is published or given up. The hook pays two stores; the checkpoint thread's
  // membarrier (or, where there is none, the exchange here) orders them against its own reads.
  class InFlight {
   public:
    InFlight(ThreadChunk& chunk, bool fence) : chunk_(chunk) {
      if (fence) [[unlikely]] {
        // A sequentially consistent exchange orders the mark before the clock's read (a locked
        // instruction is a full barrier), where a relaxed store may wait in the store buffer.
        __atomic_exchange_n(&chunk_.in_flight, 1u, __ATOMIC_SEQ_CST);
      } else {
        __atomic_store_n(&chunk_.in_flight, 1u, __ATOMIC_RELAXED);
        std::atomic_signal_fence(std::memory_order_seq_cst);
      }
    }
    ~InFlight() { __atomic_store_n(&chunk_.in_flight, 0u, __ATOMIC_RELEASE); }
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;

   private:
    ThreadChunk& chunk_;
  };

  // Returns whether the record was written (stamped with its time).
  template <class R>
  bool write(ThreadChunk& chunk, R& rec) {
    constexpr std::size_t kMaxBytes = format::max_record_bytes<R>();
    if constexpr (format::is_definition<R>()) {
      if (bounded_) return write_definition(rec);
    }
    if (!usable(chunk, kMaxBytes) && !attach(chunk, kMaxBytes)) [[unlikely]]
      return sharing(chunk) && write_shared(rec);
    return write_at(chunk, rec);
  }

  // Stamps and appends `rec` to `chunk`, which has room for it.
  template <class R>
  [[gnu::always_inline]] bool write_at(ThreadChunk& chunk, R& rec) {
    constexpr std::size_t kMaxBytes = format::max_record_bytes<R>();
    const InFlight in_flight(chunk, fence_in_hooks_.load(std::memory_order_relaxed));
    rec.time_ns = now_ns();
    if constexpr (format::encodes_in_place<R>()) {
      // Events: encoded in place, past the published bytes, then published.
      uint8_t* at = chunk.base + kChunkHeader + chunk.used;
      const std::size_t size = format::encode_record_at(rec, chunk.codec, at);
      if (size == 0) [[unlikely]]
        return false;
      publish(chunk, at, size);
    } else {
      format::FixedBuffer<kMaxBytes> frame;
      format::encode_record(rec, chunk.codec, frame);
      if (frame.overflowed()) return false;
      append(chunk, frame.data(), frame.size());
    }
    return true;
  }

  // Bounded traces: a thread past the chunks threads may hold (own_chunk_budget_) writes into
  // the shared chunk, one thread at a time. Its records then name no thread (the chunk's header
  // names none), and each costs the thread a lock; the file stays within its limit however many
  // threads write.
  bool sharing(const ThreadChunk& chunk) const {
    return chunk.sharing != 0 && chunk.sharing == generation_.load(std::memory_order_acquire);
  }
  template <class R>
  [[gnu::noinline]] bool write_shared(R& rec) {
    constexpr std::size_t kMaxBytes = format::max_record_bytes<R>();
    std::lock_guard<std::mutex> lock(shared_mutex_);
    if (!usable(shared_, kMaxBytes) && !attach_shared(kMaxBytes)) return false;
    return write_at(shared_, rec);
  }
  bool attach_shared(std::size_t bytes);  // under shared_mutex_
  // The thread leaves the chunk it holds, if any, and writes into the shared chunk from now on.
  void share_locked(ThreadChunk& chunk);

  // A caching allocator's block event, written as write() does; except that a completed free
  // that follows this thread's free request of the same block, with nothing between them in its
  // chunk (PyTorch completes most frees at once), is written as a BlockFreedAtOnce record: two
  // bytes, no clock read, the request's time. Not in a bounded trace, whose checkpoint thread
  // folds the records as they come.
  void write_block(ThreadChunk& chunk, format::BlockRecord& rec) {
    if (follows_its_request(chunk, rec)) {
      write_freed_at_once(chunk);
    } else if (write(chunk, rec) &&
               rec.action == static_cast<uint32_t>(format::BlockAction::kFreeRequested)) {
      chunk.request = {chunk.used, rec.allocator, rec.device, rec.address, rec.size, rec.stream};
    }
  }
  // Whether `rec` completes the free request that is the last record of this thread's chunk.
  bool follows_its_request(const ThreadChunk& chunk, const format::BlockRecord& rec) const {
    const ThreadChunk::LastRequest& r = chunk.request;
    return rec.action == static_cast<uint32_t>(format::BlockAction::kFreeCompleted) &&
           r.end == chunk.used && r.end != 0 && r.address == rec.address &&
           r.allocator == rec.allocator && r.device == rec.device && r.size == rec.size &&
           r.stream == rec.stream && !bounded_ && usable(chunk, 2);
  }
  void write_freed_at_once(ThreadChunk& chunk) {
    uint8_t* at = chunk.base + kChunkHeader + chunk.used;
    at[0] = static_cast<uint8_t>(format::RecordType::kBlockFreedAtOnce);
    at[1] = 0;  // no payload
    publish(chunk, at, 2);
    chunk.request.end = 0;  // one completion per request
  }

  // Bounded traces: a definition goes into the chunks never reused.
  template <class R>
  bool write_definition(R& rec) {
    std::lock_guard<std::mutex> lock(mutex_);
    const bool first = !started();
    if (!ensure_open_locked()) return false;
    if (first) write_process_info_locked(definitions_);
    rec.time_ns = now_ns();
    return append_locked(definitions_, ChunkRole::kDefinitions, rec);
  }
  // Encodes `rec` (its time already set) into one of the writer's own chunks, taking a new one
  // when it is full.
  template <class R>
  bool append_locked(ThreadChunk& chunk, ChunkRole role, const R& rec) {
    format::GrowableBuffer frame;
    format::encode_record(rec, chunk.codec, frame);
    if (frame.size() > kChunkSize - kChunkHeader - kStopNoteRoom) return false;
    if (!usable(chunk, frame.size())) {
      if (!new_chunk_locked(chunk, role)) return false;
      frame = format::GrowableBuffer{};
      format::encode_record(rec, chunk.codec, frame);  // deltas restart in the new chunk
    }
    append(chunk, frame.data(), frame.size());
    return true;
  }
  // Bounded traces: the checkpoint thread (or, when it could not be started, the thread that
  // needs a chunk) folds the records published so far into the live set (LiveFolder) and, every
  // quarter of the limit, writes a checkpoint of it. A fold's cut, taken under the lock:
  struct Cut {
    uint64_t time_ns = 0;     // every record before it is published, none after it folded yet
    uint32_t checkpoint = 0;  // the checkpoint it begins, or 0
  };
  // Takes the cut: waits (briefly) for the records in flight on other threads. False when one
  // stays in flight too long (a thread stopped mid-record): no cut this time.
  bool take_cut_locked(Cut& cut);
  // A fold from the cut on, and its checkpoint if it begins one.
  void end_fold_locked(const Cut& cut, bool folded, const std::string& why);
  void fold_inline_locked();  // all of it under the lock (no checkpoint thread)
  void start_fold_thread_locked();
  static void* fold_thread_main(void* writer);
  void fold_loop();
  void request_fold() {
    fold_wake_.fetch_add(1, std::memory_order_release);
    fold_wake_.notify_one();
  }
  // Writes a checkpoint of the live set, at the cut's time (bounded traces).
  void write_checkpoint_locked(const Cut& cut);
  // The thread needs a chunk, the file is at its limit and none can be reused: waits (a while at
  // most) for the next checkpoint, which makes some reusable unless threads hold them all. The
  // hooks wait only when the checkpoint thread falls a quarter of the limit behind them.
  void wait_for_checkpoint_locked();
  // Bounded traces: the size up to which chunks for `role` grow the file.
  uint64_t limit_locked(ChunkRole role) const;
  // Bounded traces: a chunk to reuse instead of growing the file, into `offset`.
  bool reuse_locked(uint64_t& offset, ChunkRole role);
  bool usable(const ThreadChunk& chunk, std::size_t bytes) const {
    return chunk.base != nullptr &&
           chunk.generation == generation_.load(std::memory_order_acquire) &&
           chunk.used + bytes <= kChunkSize - kChunkHeader - kStopNoteRoom;
  }
  // The note for what signal handlers' hooks dropped on this thread (the thread is busy).
  void note_dropped(ThreadChunk& chunk);
  // A note in this thread's chunk, using the room kept for it when need be (under the lock).
  bool note_locked(ThreadChunk& chunk, const std::string& text);
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
  // Whether fd_ is still the trace file; if the program closed it or put another file at its
  // number, the file is opened again by its path (when it is still the same file). Never
  // closes a descriptor that is not ours.
  bool descriptor_ours_locked();
  void close_descriptor_locked();
  // Reserves at least one more chunk's disk space past file_size_, within the file-size limit;
  // false with the reason when there is none.
  bool grow_locked(std::string& why);
  int reserve_space(uint64_t offset, uint64_t bytes) const;
  // Recording stops for good (this file): the reason goes into this thread's chunk as a note
  // and into the header page; no thread writes again.
  void stop_locked(ThreadChunk& chunk, const std::string& why);
  bool new_chunk_locked(ThreadChunk& chunk, ChunkRole role = ChunkRole::kThread);
  bool place_chunk_locked(ThreadChunk& chunk, ChunkRole role, bool holds, void*& map,
                          uint64_t& offset, bool& reused);
  void map_spare_locked();
  // A recorder's thread took the spare chunk, or found none: the program's thread that records
  // next maps another (it may open the file again; the recorder's threads may not).
  void refill_spare(ThreadChunk& chunk);
  // The note that says how many of the recorder's threads' records could not be written.
  void note_unwritten_locked(ThreadChunk& chunk);
  // The chunk `chunk` leaves for good (sealed), for reuse when the trace is bounded.
  void left_locked(const ThreadChunk& chunk, ChunkRole role);
  void store_header_word(std::size_t offset, uint64_t value);
  void write_process_info_locked(ThreadChunk& chunk);
  void write_thread_locked(ThreadChunk& chunk);
  // Writes the chunk's record count into its header (format 4.1): when its thread leaves it.
  static void seal(ThreadChunk& chunk);
  void unmap_locked(uint8_t* base);
  // A thread that ends gives its chunk's mapping back (its records stay in the file).
  static void on_thread_exit(void* writer);
  void give_up_locked(const std::string& why);

  static constexpr uint32_t kChunkHeader = 32;
  // constinit: other files then know it needs no initialization on first use, and read it with
  // no check of a wrapper function's address (a line of data more per record).
  static constinit thread_local ThreadChunk thread_chunk_
      __attribute__((tls_model("initial-exec")));
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

  // What every record reads, in one cache line: a hook finds it cold, behind the program's work.
  alignas(64) std::atomic<uint32_t> generation_;
  std::atomic<bool> started_{false};
  std::atomic<bool> spare_taken_{false};  // see refill_spare()
  // No membarrier: each record's in-flight mark is a sequentially consistent exchange instead.
  std::atomic<bool> fence_in_hooks_{false};
  uint64_t mono_start_ns_ = 0;

  const Config& config_;
  // A line of its own: a lock taken (a new chunk, a bounded trace's definitions, its checkpoint
  // thread) writes it, which would evict the line above from every recording thread's cache.
  alignas(64) mutable std::mutex mutex_;
  int fd_ = -1;
  bool disabled_ = false;  // creating the file failed, or recording stopped: untraced from now
  std::atomic<bool> off_{false};  // disabled_, read without the lock on the way to it
  std::string path_;
  std::string absolute_path_;  // to open it again whatever the program's working directory
  dev_t device_ = 0;           // the file's identity, to know our descriptor from the program's
  ino_t inode_ = 0;
  pid_t pid_ = 0;             // the process the file is for
  bool exec_marked_ = false;  // an exec note was written and no failure since
  uint64_t file_size_ = 0;    // bytes reserved on disk
  uint64_t next_offset_ = 0;  // where the next chunk goes
  uint32_t next_writer_ = 0;
  std::vector<void*> mapped_;  // the chunks mapped now: one per live writing thread
  // A chunk mapped ahead by a program's thread, for a recorder's thread that finds the trace's
  // descriptor closed (its space is counted in next_offset_; its magic is 0 until taken).
  void* spare_ = nullptr;
  uint64_t spare_offset_ = 0;
  bool want_spare_ = false;  // the recorder has threads of its own that write
  uint64_t unwritten_ = 0;   // their records lost for want of a spare, not yet told
  pthread_key_t thread_exit_key_{};
  bool have_thread_exit_key_ = false;

  // Bounded traces (GPUMEMTRACE_MAX_SIZE): see format/README.md.
  const bool bounded_;
  // How many chunks threads may hold at once: what the limit leaves to them after the header,
  // the definitions, the checkpoints, the shared chunk and the history a checkpoint must find
  // behind it to make chunks reusable. Past it, threads share one chunk.
  const uint32_t own_chunk_budget_;
  std::atomic<uint32_t> own_chunks_{0};  // held by threads now (changed under mutex_)
  // Taken before mutex_, never after it.
  std::mutex shared_mutex_;
  ThreadChunk shared_;                  // under shared_mutex_ (and mutex_ where a chunk is added)
  std::atomic<uint32_t> fold_wake_{0};  // moves on each request to the checkpoint thread
  // Under mutex_:
  std::unique_ptr<LiveFolder> folder_;  // when bounded; fold() runs outside the lock
  std::vector<ThreadChunk*> writing_;   // the cursors of the threads that write chunks now
  bool fold_thread_started_ = false;
  bool fold_broken_ = false;  // a fold failed: no more checkpoints
  bool checkpoint_due_ = false;
  uint32_t last_checkpoint_ended_ = 0;  // the id of the last checkpoint written, whole or not
  std::condition_variable checkpoint_ended_;
  ThreadChunk definitions_;  // the chunk definitions go to (never reused)
  ThreadChunk checkpoints_;  // the chunk checkpoints go to
  ChunkRing ring_;
  uint32_t checkpoints_begun_ = 0;
  uint32_t newest_whole_checkpoint_ = 0;
  uint32_t chunks_since_checkpoint_ = 0;
  uint64_t dropped_records_ = 0;
  uint8_t* header_map_ = nullptr;  // the header page, mapped for the words updated in place
};

}  // namespace gmt::interpose
