// SPDX-License-Identifier: Apache-2.0
#include "interpose/record/trace_writer.h"

#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstring>
#include <string_view>
#include <thread>

#include "format/chunk.h"
#include "format/file_header.h"
#include "format/hot_path.h"
#include "format/recording_end.h"
#include "interpose/common/depth_guard.h"
#include "interpose/common/diagnostic.h"
#include "interpose/common/instance_id.h"
#include "interpose/common/thread_id.h"
#include "interpose/output_path.h"
#include "interpose/record/process_info.h"

namespace gmt::interpose {

constinit thread_local TraceChunkCursor TraceWriter::thread_chunk_;

__attribute__((noinline)) TraceChunkCursor& TraceWriter::thread_chunk_out_of_line() {
  return thread_chunk_;
}

namespace {

static_assert(TraceWriter::kChunkSize % 4096 == 0, "chunks are mapped one by one: page multiples");

bool write_all(int fd, const uint8_t* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

std::string host_name() {
  char host[HOST_NAME_MAX + 1] = {};
  return gethostname(host, sizeof host - 1) == 0 ? host : "unknown-host";
}

template <class T>
void store_le(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

// Generations are numbered across every TraceWriter of the process: a thread's chunk cursor is
// one thread_local for all of them, and a test process has several writers, whose generations
// must never match.
uint32_t new_generation() {
  return static_cast<uint32_t>(new_instance_id());
}

// The trace's descriptor goes above the numbers a program hands out itself, so that a program
// that opens files after closing what it did not open (daemons, closefrom) does not get ours
// back as its own: just under the soft limit of open files, at most 1000. A program can still
// close it or put a file of its own there (close_range, dup2), which descriptor_ours_locked()
// finds. On failure the descriptor stays where it is.
int move_high(int fd) {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0) return fd;
  const rlim_t limit = files.rlim_cur == RLIM_INFINITY ? 1024 : files.rlim_cur;
  if (limit < 64) return fd;
  const int target = static_cast<int>(std::min<rlim_t>(limit, 1024) - 24);
  if (fd >= target) return fd;
  const int high = fcntl(fd, F_DUPFD_CLOEXEC, target);
  if (high < 0) return fd;
  close(fd);
  return high;
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

bool same_file(const struct stat& st, dev_t device, ino_t inode) {
  return st.st_dev == device && st.st_ino == inode;
}

// The stop note's text, short enough for the room kept for it in every chunk.
std::string stop_note_text(const std::string& why) {
  std::string text = std::string(format::kStoppedNote) + why;
  if (text.size() > TraceWriter::kStopNoteRoom - 32) text.resize(TraceWriter::kStopNoteRoom - 32);
  return text;
}

// The chunks threads may hold in a file of `max_size` bytes: of the chunks it has room for, the
// definitions, two of checkpoints and the shared chunk take one each and half of the rest stays
// history, so that every checkpoint finds chunks behind it to make reusable.
uint32_t own_chunk_budget(uint64_t max_size) {
  if (max_size == 0) return UINT32_MAX;
  const uint64_t slots = max_size > format::kFirstChunkOffset
                             ? (max_size - format::kFirstChunkOffset) / TraceWriter::kChunkSize
                             : 0;
  return static_cast<uint32_t>(std::clamp<uint64_t>(slots > 4 ? (slots - 4) / 2 : 0, 1, 1u << 20));
}

}  // namespace

TraceWriter::TraceWriter(const Config& config)
    : generation_(new_generation()),
      config_(config),
      bounded_(config.max_size != 0),
      own_chunk_budget_(own_chunk_budget(config.max_size)),
      folder_(bounded_ ? std::make_unique<LiveFolder>(kChunkSize) : nullptr) {
  // Room for the chunks of many threads made now: a chunk may be attached in a signal handler's
  // hook (its thread outside the writer), where growing the list would allocate.
  mapped_.reserve(256);
  have_thread_exit_key_ = pthread_key_create(&thread_exit_key_, &TraceWriter::on_thread_exit) == 0;
}

void TraceWriter::on_thread_exit(void* writer) {
  auto* self = static_cast<TraceWriter*>(writer);
  std::lock_guard<std::mutex> lock(self->mutex_);
  ThreadChunk& chunk = thread_chunk();
  if (chunk.base != nullptr &&
      chunk.generation == self->generation_.load(std::memory_order_relaxed)) {
    seal(chunk);
    self->left_locked(chunk, ChunkRole::kThread);
    if (self->folder_) {
      self->folder_->writer_ended(chunk.writer);
      self->own_chunks_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  std::erase(self->writing_, &chunk);
  // Also a chunk of a recording that stopped: it is still mapped, and only its thread knows
  // when it is no longer written.
  if (chunk.base != nullptr) self->unmap_locked(chunk.base);
  chunk = ThreadChunk{};
}

// The chunk's record count goes into its header once, as its writer leaves it, rather than
// with every record: a store per record cost the hook about 1.5 ns. A chunk left unsealed (its
// thread still running when the process ended, or the process killed) has no count for its
// bytes, and a reader counts its records itself; so does one written to after it was sealed
// (exit-time frees after finish()): the count's length is then short of the published one.
void TraceWriter::seal(ThreadChunk& chunk) {
  __atomic_store_n(reinterpret_cast<uint64_t*>(chunk.base + format::ChunkHeaderLayout::kCounted),
                   format::counted_word(chunk.used, chunk.records), __ATOMIC_RELAXED);
}

// Only the chunks threads are writing stay mapped: a full chunk is in the page cache and the
// file already, and keeping it mapped would make a long trace's size count against the
// program's memory.
void TraceWriter::unmap_locked(uint8_t* base) {
  auto it = std::find(mapped_.begin(), mapped_.end(), static_cast<void*>(base));
  if (it == mapped_.end()) return;
  munmap(base, kChunkSize);
  mapped_.erase(it);
}

std::string TraceWriter::path() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return path_;
}

void TraceWriter::give_up_locked(const std::string& why) {
  print_diagnostic(why + "; this process (pid " + std::to_string(getpid()) +
                   ") runs on without tracing");
  close_descriptor_locked();
  disabled_ = true;
  off_.store(true, std::memory_order_relaxed);
  generation_.store(new_generation(), std::memory_order_release);  // no thread keeps writing
}

bool TraceWriter::descriptor_ours_locked() {
  struct stat st {};
  if (fd_ >= 0 && fstat(fd_, &st) == 0 && same_file(st, device_, inode_)) return true;
  // Closed by the program, or a file of its own at that number now: leave it alone, and open
  // ours again if its name still leads to it.
  fd_ = -1;
  if (absolute_path_.empty() || thread_chunk().opens_nothing) return false;
  const int fd = open(absolute_path_.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  if (fstat(fd, &st) != 0 || !same_file(st, device_, inode_)) {
    close(fd);
    return false;
  }
  fd_ = move_high(fd);
  return true;
}

void TraceWriter::close_descriptor_locked() {
  struct stat st {};
  if (fd_ >= 0 && fstat(fd_, &st) == 0 && same_file(st, device_, inode_)) close(fd_);
  fd_ = -1;
}

int TraceWriter::reserve_space(uint64_t offset, uint64_t bytes) const {
  if (config_.test_enospc_at != 0 && offset + bytes > config_.test_enospc_at) return ENOSPC;
  return posix_fallocate(fd_, static_cast<off_t>(offset), static_cast<off_t>(bytes));
}

// Up to 16 chunks at a time; fewer where the file-size limit says so (writing past it would
// raise SIGXFSZ in the program, which kills it) or the disk has no room for as many.
bool TraceWriter::grow_locked(std::string& why) {
  const uint64_t need = next_offset_ + kChunkSize - file_size_;
  uint64_t grow = std::max<uint64_t>(need, 16 * static_cast<uint64_t>(kChunkSize));
  rlimit size_limit{};
  if (getrlimit(RLIMIT_FSIZE, &size_limit) == 0 && size_limit.rlim_cur != RLIM_INFINITY) {
    const uint64_t limit = size_limit.rlim_cur;
    const uint64_t room = limit > file_size_ ? (limit - file_size_) / kChunkSize * kChunkSize : 0;
    if (room < need) {
      why = "the file size limit (RLIMIT_FSIZE, " + std::to_string(limit) +
            " bytes) leaves no room for the next chunk at byte " + std::to_string(next_offset_);
      return false;
    }
    grow = std::min(grow, room);
  }
  if (bounded_) {
    // A bounded trace reserves no more than its limit ahead (past it, chunks are reused).
    const uint64_t room = config_.max_size > file_size_
                              ? (config_.max_size - file_size_) / kChunkSize * kChunkSize
                              : 0;
    grow = std::max(need, std::min(grow, room));
  }
  while (true) {
    const int err = reserve_space(file_size_, grow);
    if (err == 0) {
      file_size_ += grow;
      return true;
    }
    const bool full = err == ENOSPC || err == EDQUOT || err == EFBIG;
    if (!full || grow <= need) {
      why = (full ? "the disk is full (" : "growing the file failed (") +
            std::string(std::strerror(err)) + ") at byte " + std::to_string(file_size_);
      return false;
    }
    grow = std::max(need, grow / 2 / kChunkSize * kChunkSize);  // a smaller last growth
  }
}

void TraceWriter::stop_locked(ThreadChunk& chunk, const std::string& why) {
  if (disabled_) return;
  const bool own_chunk =
      chunk.base != nullptr && chunk.generation == generation_.load(std::memory_order_relaxed);
  if (own_chunk) {
    note_locked(chunk, stop_note_text(why));
    seal(chunk);
  }
  // The header page says it too: it is there even when no chunk could be written.
  if (descriptor_ours_locked()) {
    const std::string bytes = format::stop_reason_bytes(why);
    const ssize_t ignored =
        pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(format::kStopReasonOffset));
    (void)ignored;  // the note, if there is one, still tells
  }
  // The chunks other threads are writing stay mapped until their threads end: they may be in
  // the middle of a record. They stop at their next one (the generation moves).
  close_descriptor_locked();
  disabled_ = true;
  off_.store(true, std::memory_order_relaxed);
  generation_.store(new_generation(), std::memory_order_release);
}

bool TraceWriter::note_locked(ThreadChunk& chunk, const std::string& text) {
  format::NoteRecord note;
  note.time_ns = now_ns();
  note.text = text;
  format::FixedBuffer<format::max_record_bytes<format::NoteRecord>()> frame;
  format::encode_record(note, chunk.codec, frame);
  if (frame.overflowed() || chunk.used + frame.size() > kChunkSize - kChunkHeader) return false;
  append(chunk, frame.data(), frame.size());
  return true;
}

namespace {

// A NoteRecord whose text is built on the stack: the dropped note may be made in a signal
// handler (a handler's hook that found its thread outside the writer), where allocating is not
// safe. Encoded exactly as a NoteRecord.
struct StackNote {
  static constexpr format::RecordType kType = format::NoteRecord::kType;
  static constexpr std::size_t kMaxBytes = 256;
  uint64_t time_ns = 0;
  std::string_view text;

  template <class Self, class V>
  static constexpr void fields(Self& r, V& v) {
    v.time("time_ns", r.time_ns);
    v.str("text", r.text);
  }
};

// Appends `text` to buf[at..size), returning the new end (cut at the buffer's end).
std::size_t put(char* buf, std::size_t size, std::size_t at, std::string_view text) {
  const std::size_t n = std::min(text.size(), size - at);
  std::memcpy(buf + at, text.data(), n);
  return at + n;
}

std::size_t put(char* buf, std::size_t size, std::size_t at, uint64_t value) {
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  return put(buf, size, at, std::string_view(digits, ec == std::errc() ? end - digits : 0));
}

}  // namespace

void TraceWriter::note_dropped(ThreadChunk& chunk) {
  // Taken and cleared in one instruction: a handler that comes while the note is being made
  // counts towards the next one, never in neither.
  const uint32_t dropped = __atomic_exchange_n(&chunk.dropped, 0, __ATOMIC_RELAXED);
  char text[200];
  std::size_t n = put(text, sizeof text, 0, format::kDroppedNote);
  n = put(text, sizeof text, n, dropped);
  n = put(text, sizeof text, n, " made by signal handlers that interrupted this thread (tid ");
  n = put(text, sizeof text, n, thread_id());
  n = put(text, sizeof text, n, ") while it was recording");
  StackNote note;
  note.text = std::string_view(text, n);
  write(chunk, note);
}

// O_EXCL and O_NOFOLLOW: never overwrite a trace, never write through a planted symlink. A
// name already taken (the image before an exec, a reused pid, a pattern without %p) gets the
// pid and a counter, by output_path.h's one rule, rather than losing either file.
bool TraceWriter::create_file_locked(const std::string& base) {
  const bool names_pid = pattern_names_pid(config_.output_pattern);
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string candidate =
        attempt == 0 ? base : taken_name_candidate(base, getpid(), names_pid, attempt);
    const int fd =
        open(candidate.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      struct stat st {};
      if (fstat(fd, &st) != 0) {
        close(fd);
        give_up_locked("cannot use trace file '" + candidate + "': " + std::strerror(errno));
        return false;
      }
      device_ = st.st_dev;
      inode_ = st.st_ino;
      fd_ = move_high(fd);
      path_ = candidate;
      absolute_path_ = absolute(candidate);
      pid_ = getpid();
      started_.store(true, std::memory_order_release);
      return true;
    }
    if (errno != EEXIST) {
      give_up_locked("cannot create trace file '" + candidate + "': " + std::strerror(errno));
      return false;
    }
  }
  give_up_locked("cannot create trace file '" + base + "': every candidate name already exists");
  return false;
}

bool TraceWriter::ensure_open_locked() {
  if (disabled_) return false;
  if (started()) return true;                      // fd_ is checked where it is used, at growth
  if (thread_chunk().opens_nothing) return false;  // a program's thread creates the file
  // Not even the header fits under the file-size limit: no file (writing it would raise
  // SIGXFSZ).
  rlimit size_limit{};
  if (getrlimit(RLIMIT_FSIZE, &size_limit) == 0 && size_limit.rlim_cur != RLIM_INFINITY &&
      size_limit.rlim_cur < format::kFirstChunkOffset) {
    give_up_locked("the file size limit (RLIMIT_FSIZE, " + std::to_string(size_limit.rlim_cur) +
                   " bytes) is below the trace header's size");
    return false;
  }
  const OutputPathVars vars{getpid(), host_name(), rank_from_environment()};
  if (!create_file_locked(expand_output_pattern(config_.output_pattern, vars))) return false;
  mono_start_ns_ = monotonic_ns();
  uint8_t header[format::kFirstChunkOffset] = {};
  format::write_header(header, kChunkSize, config_.max_size);
  if (!write_all(fd_, header, sizeof header)) {
    give_up_locked("cannot write trace file '" + path_ + "': " + std::strerror(errno));
    return false;
  }
  // The words updated in place (where the chunks end; a bounded trace's history), each with one
  // store, as a chunk's published word: mapped, so that they are in the page cache the moment
  // they are stored. An unbounded trace does without where it cannot: its readers then cannot
  // tell a file that lost whole chunks at its end, and nothing else changes.
  void* map = mmap(nullptr, format::kFirstChunkOffset, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (map != MAP_FAILED) {
    header_map_ = static_cast<uint8_t*>(map);
  } else if (bounded_) {
    give_up_locked("cannot map the header of trace file '" + path_ + "': " + std::strerror(errno));
    return false;
  }
  file_size_ = next_offset_ = format::kFirstChunkOffset;
  next_writer_ = 0;
  generation_.store(new_generation(), std::memory_order_release);
  if (bounded_) start_fold_thread_locked();
  return true;
}

// Where the next chunk goes (a reused one, or new space, the file grown for it), mapped. False
// when the thread writes into the shared chunk instead, or recording stopped.
bool TraceWriter::place_chunk_locked(ThreadChunk& chunk, ChunkRole role, bool holds, void*& map,
                                     uint64_t& offset, bool& reused) {
  if (bounded_ && role == ChunkRole::kThread && !holds &&
      own_chunks_.load(std::memory_order_relaxed) >= own_chunk_budget_) {
    share_locked(chunk);
    return false;
  }
  offset = next_offset_;
  reused = reuse_locked(offset, role);
  if (!reused && bounded_ && holds_events(role) && next_offset_ + kChunkSize > limit_locked(role)) {
    if (role == ChunkRole::kThread && !holds) {
      share_locked(chunk);  // no chunk of its own to wait for
      return false;
    }
    // A checkpoint makes reusable only the chunks left before its cut: those still being
    // written when it began wait for the next. A few checkpoints, before the file grows.
    for (int checkpoints = 0; !reused && checkpoints < kCheckpointsBeforeGrowing; ++checkpoints) {
      wait_for_checkpoint_locked();
      if (disabled_) return false;
      if (fold_broken_) break;
      reused = reuse_locked(offset, role);
    }
    if (!reused && role == ChunkRole::kThread) {
      // Only the shared chunk grows the file past its limit, and only when no checkpoint came.
      share_locked(chunk);
      return false;
    }
    if (!reused) offset = next_offset_;
  }
  if (!reused && next_offset_ + kChunkSize > file_size_) {
    std::string why;
    if (!grow_locked(why)) {
      stop_locked(chunk, why);
      return false;
    }
  }
  map = mmap(nullptr, kChunkSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd_,
             static_cast<off_t>(offset));
  if (map == MAP_FAILED) {
    stop_locked(chunk, std::string("mapping the next chunk failed (") + std::strerror(errno) +
                           ") at byte " + std::to_string(offset));
    return false;
  }
  mapped_.push_back(map);
  if (!reused) {
    next_offset_ += kChunkSize;
    // Before the chunk's magic: a reader that finds the file shorter knows chunks are missing.
    store_header_word(format::kChunksEndOffset, next_offset_);
  }
  return true;
}

namespace {

std::string unwritten_text(uint64_t count) {
  return std::string(format::kDroppedNote) + std::to_string(count) +
         " made by the recorder's own threads (samples, checkpoints) while the program had "
         "closed the trace file's descriptor and made no CUDA call (those threads open no file)";
}

}  // namespace

// New space, mapped, with no magic (a reader skips it until a thread takes it). Nothing is
// stopped when it cannot be had: only a recorder's thread would miss it.
void TraceWriter::map_spare_locked() {
  if (spare_ != nullptr || disabled_ || !started() || getpid() != pid_) return;
  if (bounded_ && next_offset_ + kChunkSize > limit_locked(ChunkRole::kThread)) return;
  if (!descriptor_ours_locked()) return;
  std::string why;
  if (next_offset_ + kChunkSize > file_size_ && !grow_locked(why)) return;
  void* map = mmap(nullptr, kChunkSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd_,
                   static_cast<off_t>(next_offset_));
  if (map == MAP_FAILED) return;
  mapped_.push_back(map);
  spare_ = map;
  spare_offset_ = next_offset_;
  next_offset_ += kChunkSize;
  store_header_word(format::kChunksEndOffset, next_offset_);
}

void TraceWriter::note_unwritten_locked(ThreadChunk& chunk) {
  if (note_locked(chunk, unwritten_text(unwritten_))) unwritten_ = 0;
}

void TraceWriter::keep_spare_chunk() {
  ThreadChunk& chunk = thread_chunk();
  if (chunk.busy || chunk.opens_nothing) return;
  Busy busy(chunk);  // a signal handler's hook must not wait on the lock this thread holds
  std::lock_guard<std::mutex> lock(mutex_);
  want_spare_ = true;
  map_spare_locked();
}

void TraceWriter::refill_spare(ThreadChunk& chunk) {
  if (chunk.opens_nothing) return;
  std::lock_guard<std::mutex> lock(mutex_);
  // One try per request: where the file cannot be opened again, the next drop asks again.
  spare_taken_.store(false, std::memory_order_relaxed);
  map_spare_locked();
}

void TraceWriter::this_thread_opens_nothing() {
  thread_chunk().opens_nothing = true;
}

// Disk space is allocated for real (not a sparse hole) before a chunk is handed out: writing
// through a mapping into a full disk would raise SIGBUS in the program.
//
// The descriptor is checked here, the only place it is used on the way: a program may have
// closed it, or put a file of its own at its number, since the last chunk. The recorder's own
// threads do not open it again (this_thread_opens_nothing): they take the spare chunk.
bool TraceWriter::new_chunk_locked(ThreadChunk& chunk, ChunkRole role) {
  const bool opens_nothing = thread_chunk().opens_nothing;
  const uint32_t generation = generation_.load(std::memory_order_relaxed);
  const bool holds = chunk.base != nullptr && chunk.generation == generation;
  void* map = nullptr;
  uint64_t offset = 0;
  bool reused = false;
  if (!descriptor_ours_locked()) {
    if (!opens_nothing) {
      stop_locked(chunk,
                  "the program closed the trace file's descriptor (or replaced it) and the file "
                  "cannot be opened again by its name");
      return false;
    }
    spare_taken_.store(true, std::memory_order_relaxed);
    if (spare_ == nullptr) {
      ++unwritten_;  // told by the next program's thread that opens the file again
      return false;
    }
    map = spare_;
    offset = spare_offset_;
    spare_ = nullptr;
  } else if (!place_chunk_locked(chunk, role, holds, map, offset, reused)) {
    return false;
  }
  if (bounded_ && holds_events(role) &&
      ++chunks_since_checkpoint_ >= std::max<uint64_t>(1, config_.max_size / 4 / kChunkSize)) {
    checkpoint_due_ = true;
  }
  if (!holds) {
    chunk.writer = next_writer_++;
    chunk.sequence = 0;
    // Ask to be told when this thread ends (the value only has to be non-null).
    if (have_thread_exit_key_ && role == ChunkRole::kThread)
      pthread_setspecific(thread_exit_key_, this);
    if (bounded_ && holds_events(role) &&
        std::find(writing_.begin(), writing_.end(), &chunk) == writing_.end()) {
      writing_.push_back(&chunk);
    }
    if (bounded_ && role == ChunkRole::kThread) {
      own_chunks_.fetch_add(1, std::memory_order_relaxed);
      chunk.sharing = 0;
    }
  } else {
    seal(chunk);
    left_locked(chunk, role);
    unmap_locked(chunk.base);  // the full chunk this thread leaves
    ++chunk.sequence;
  }
  chunk.base = static_cast<uint8_t*>(map);
  chunk.offset = offset;
  chunk.used = 0;
  chunk.crc = 0;
  chunk.records = 0;
  chunk.generation = generation;
  chunk.codec = format::CodecState{};
  chunk.request = {};
  using L = format::ChunkHeaderLayout;
  if (reused) {
    // No reader may take the old records for the new writer's: the magic goes first, then the
    // words that said how many bytes were published. The old bytes stay, unpublished.
    __atomic_store_n(reinterpret_cast<uint32_t*>(chunk.base + L::kMagic), 0u, __ATOMIC_RELEASE);
    __atomic_store_n(reinterpret_cast<uint64_t*>(chunk.base + L::kPublished), uint64_t{0},
                     __ATOMIC_RELEASE);
    __atomic_store_n(reinterpret_cast<uint64_t*>(chunk.base + L::kCounted), uint64_t{0},
                     __ATOMIC_RELEASE);
  }
  store_le<uint32_t>(chunk.base + L::kWriter, chunk.writer);
  store_le<uint32_t>(chunk.base + L::kSequence, chunk.sequence);
  // The writer's own chunks name no thread.
  store_le<uint32_t>(chunk.base + L::kThread,
                     role == ChunkRole::kThread ? static_cast<uint32_t>(thread_id()) : 0u);
  // The magic last: a chunk with a magic is one a reader may look into.
  __atomic_store_n(reinterpret_cast<uint32_t*>(chunk.base + L::kMagic), format::kChunkMagic,
                   __ATOMIC_RELEASE);
  if (bounded_ && holds_events(role)) {
    // Its records are read back from the file, so only once its header is the new writer's.
    folder_->chunk_started(chunk.writer, offset);
    if (fold_thread_started_) {
      request_fold();
    } else if (checkpoint_due_) {
      fold_inline_locked();
    }
  }
  if (want_spare_ && !opens_nothing) map_spare_locked();
  return true;
}

void TraceWriter::write_process_info_locked(ThreadChunk& chunk) {
  if (bounded_) {
    append_locked(definitions_, ChunkRole::kDefinitions, capture_process_info(mono_start_ns_));
    return;
  }
  format::GrowableBuffer frame;
  format::encode_record(capture_process_info(mono_start_ns_), chunk.codec, frame);
  if (frame.size() <= kChunkSize - kChunkHeader) append(chunk, frame.data(), frame.size());
}

// A writer's first chunk starts by naming its thread.
void TraceWriter::write_thread_locked(ThreadChunk& chunk) {
  format::ThreadRecord rec;
  rec.time_ns = now_ns();
  rec.tid = thread_id();
  char name[64] = {};
  if (pthread_getname_np(pthread_self(), name, sizeof name) == 0) rec.name = name;
  if (bounded_) {
    append_locked(definitions_, ChunkRole::kDefinitions, rec);
    return;
  }
  format::FixedBuffer<format::max_record_bytes<format::ThreadRecord>()> frame;
  format::encode_record(rec, chunk.codec, frame);
  if (!frame.overflowed()) append(chunk, frame.data(), frame.size());
}

bool TraceWriter::attach(ThreadChunk& chunk, std::size_t bytes) {
  if (off_.load(std::memory_order_relaxed)) return false;  // stopped: no lock per event
  // A thread that shares stays out of the lock until a chunk of its own may be had again.
  if (sharing(chunk) && own_chunks_.load(std::memory_order_relaxed) >= own_chunk_budget_)
    return false;
  std::lock_guard<std::mutex> lock(mutex_);
  const bool first = !started();
  if (!ensure_open_locked()) return false;
  if (usable(chunk, bytes)) return true;  // another path got here first (after fork, say)
  const bool attached = new_chunk_locked(chunk);
  if (!attached && !sharing(chunk)) return false;
  if (first) write_process_info_locked(chunk);
  const uint32_t generation = generation_.load(std::memory_order_relaxed);
  // A bounded trace's Thread records are definitions: one per thread, whatever chunks it writes.
  if (bounded_ ? chunk.named != generation : chunk.sequence == 0) {
    write_thread_locked(chunk);
    chunk.named = generation;
  }
  if (!attached) return false;  // the caller writes into the shared chunk
  if (unwritten_ != 0 && !chunk.opens_nothing) note_unwritten_locked(chunk);
  return usable(chunk, bytes) || (new_chunk_locked(chunk) && usable(chunk, bytes));
}

bool TraceWriter::attach_shared(std::size_t bytes) {
  if (off_.load(std::memory_order_relaxed)) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!ensure_open_locked()) return false;
  return new_chunk_locked(shared_, ChunkRole::kShared) && usable(shared_, bytes);
}

void TraceWriter::share_locked(ThreadChunk& chunk) {
  const uint32_t generation = generation_.load(std::memory_order_relaxed);
  if (chunk.base != nullptr && chunk.generation == generation) {
    seal(chunk);
    left_locked(chunk, ChunkRole::kThread);
    folder_->writer_ended(chunk.writer);
    unmap_locked(chunk.base);
    own_chunks_.fetch_sub(1, std::memory_order_relaxed);
  }
  chunk.base = nullptr;
  chunk.generation = generation;
  chunk.sharing = generation;
}

void TraceWriter::append(ThreadChunk& chunk, const uint8_t* bytes, std::size_t size) {
  uint8_t* at = chunk.base + kChunkHeader + chunk.used;
  std::memcpy(at, bytes, size);
  publish(chunk, at, size);
}

GMT_HOT_PATH void TraceWriter::publish(ThreadChunk& chunk, const uint8_t* bytes, std::size_t size) {
  chunk.crc = format::extend_crc32c(chunk.crc, bytes, size);
  chunk.used += static_cast<uint32_t>(size);
  ++chunk.records;  // every publish is one record; the header gets the count in seal()
  // One 8-byte store makes length and checksum visible together, after the bytes.
  __atomic_store_n(reinterpret_cast<uint64_t*>(chunk.base + format::ChunkHeaderLayout::kPublished),
                   format::published_word(chunk.used, chunk.crc), __ATOMIC_RELEASE);
}

void TraceWriter::finish() {
  ThreadChunk& chunk = thread_chunk();  // the one that holds the end
  if (chunk.busy) return;  // exit from a signal handler that interrupted this thread's record
  Busy busy(chunk);
  uint64_t unwritten = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!started() || disabled_) return;
    std::swap(unwritten, unwritten_);
  }
  if (unwritten != 0) {
    format::NoteRecord note;
    note.text = unwritten_text(unwritten);
    write(chunk, note);
  }
  format::EndRecord end;
  write(chunk, end);
  std::lock_guard<std::mutex> shared_lock(shared_mutex_);
  std::lock_guard<std::mutex> lock(mutex_);
  if (chunk.base != nullptr && chunk.generation == generation_.load(std::memory_order_relaxed))
    seal(chunk);
  for (ThreadChunk* own : {&definitions_, &checkpoints_, &shared_}) {
    if (own->base != nullptr && own->generation == generation_.load(std::memory_order_relaxed))
      seal(*own);
  }
  // Give back the disk space reserved for chunks that were never handed out. Exit-time frees
  // that still come find the file grown again on demand.
  if (!disabled_ && descriptor_ours_locked() &&
      ftruncate(fd_, static_cast<off_t>(next_offset_)) == 0)
    file_size_ = next_offset_;
}

void TraceWriter::exec_starting(const char* program) {
  ThreadChunk& chunk = thread_chunk();
  if (chunk.busy) return;
  Busy busy(chunk);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // A vfork child runs on its parent's memory, this object included: its exec is not ours.
    if (!started() || disabled_ || getpid() != pid_) return;
  }
  format::NoteRecord note;
  note.text = std::string(format::kExecNote) + (program != nullptr ? program : "");
  if (note.text.size() > 512) note.text.resize(512);
  write(chunk, note);
  std::lock_guard<std::mutex> lock(mutex_);
  exec_marked_ = true;
  if (chunk.base != nullptr && chunk.generation == generation_.load(std::memory_order_relaxed))
    seal(chunk);
  // As at exit: the reserve goes back (a failed exec grows the file again on demand).
  if (!disabled_ && descriptor_ours_locked() &&
      ftruncate(fd_, static_cast<off_t>(next_offset_)) == 0)
    file_size_ = next_offset_;
}

void TraceWriter::exec_failed(int error) {
  ThreadChunk& chunk = thread_chunk();
  if (chunk.busy) return;
  Busy busy(chunk);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!exec_marked_ || getpid() != pid_) return;
    exec_marked_ = false;
  }
  format::NoteRecord note;
  note.text = std::string(format::kExecFailedNote) + std::strerror(error) + "; recording goes on";
  write(chunk, note);
}

void TraceWriter::after_fork_in_child() {
  // The locks were taken in before_fork by the thread that is now the child's only thread. The
  // parent's chunks are shared mappings: unmap them so that nothing here can write into them.
  for (void* map : mapped_) munmap(map, kChunkSize);
  mapped_.clear();
  spare_ = nullptr;  // the parent's file
  unwritten_ = 0;
  if (header_map_ != nullptr) munmap(header_map_, format::kFirstChunkOffset);
  header_map_ = nullptr;
  definitions_ = ThreadChunk{};
  checkpoints_ = ThreadChunk{};
  shared_ = ThreadChunk{};
  own_chunks_.store(0, std::memory_order_relaxed);
  ring_.clear();
  if (folder_) {
    // The parent's checkpoint thread may have been folding into it, mid-change: it is left as
    // it is (never freed) and the child starts a live set of its own.
    (void)folder_.release();
    folder_ = std::make_unique<LiveFolder>(kChunkSize);
  }
  writing_.clear();
  fold_thread_started_ = fold_broken_ = checkpoint_due_ = false;
  checkpoints_begun_ = newest_whole_checkpoint_ = chunks_since_checkpoint_ = 0;
  last_checkpoint_ended_ = 0;
  dropped_records_ = 0;
  close_descriptor_locked();  // the parent's, if the number is still the trace's
  disabled_ = false;
  off_.store(false, std::memory_order_relaxed);
  exec_marked_ = false;
  started_.store(false, std::memory_order_release);
  path_.clear();
  absolute_path_.clear();
  generation_.store(new_generation(), std::memory_order_release);
  thread_chunk() = ThreadChunk{};
  mutex_.unlock();
  shared_mutex_.unlock();
}

void TraceWriter::before_fork() {
  shared_mutex_.lock();
  mutex_.lock();
}

void TraceWriter::after_fork_in_parent() {
  mutex_.unlock();
  shared_mutex_.unlock();
}

void TraceWriter::store_header_word(std::size_t offset, uint64_t value) {
  if (header_map_ == nullptr) return;
  __atomic_store_n(reinterpret_cast<uint64_t*>(header_map_ + offset), value, __ATOMIC_RELEASE);
}

void TraceWriter::left_locked(const ThreadChunk& chunk, ChunkRole role) {
  if (!bounded_ || role == ChunkRole::kDefinitions || chunk.base == nullptr) return;
  // What reuse drops is history: the records of older checkpoints are not counted in it.
  ring_.left(chunk.offset, holds_events(role) ? chunk.records : 0, checkpoints_begun_);
}

// The threads' chunks leave room for the first checkpoint's: until a checkpoint has made some
// reusable, there is no other chunk it could have.
uint64_t TraceWriter::limit_locked(ChunkRole role) const {
  const bool first_checkpoint_room = holds_events(role) && checkpoints_.base == nullptr;
  return config_.max_size - (first_checkpoint_room ? kChunkSize : 0);
}

// Only once the file has reached its limit; the header says which checkpoint a reader starts
// from, and what was dropped, before the first byte of the chunk is written over.
bool TraceWriter::reuse_locked(uint64_t& offset, ChunkRole role) {
  if (!bounded_ || next_offset_ + kChunkSize <= limit_locked(role)) return false;
  // The threads leave one reusable chunk to the checkpoints.
  const std::optional<ChunkRing::Reuse> reuse =
      ring_.take(newest_whole_checkpoint_, holds_events(role) ? 1 : 0);
  if (!reuse) {
    // None to reuse yet: the file grows past its limit until a checkpoint makes one (one taken
    // since the last chunk was handed out would make none).
    if (chunks_since_checkpoint_ > 0) checkpoint_due_ = true;
    return false;
  }
  dropped_records_ += reuse->records;
  store_header_word(format::BoundedHeaderLayout::kDroppedRecords, dropped_records_);
  store_header_word(format::BoundedHeaderLayout::kValidFrom, reuse->valid_from);
  offset = reuse->offset;
  return true;
}

// The live set as Carried records (allocations), CarriedBlock records (the caching allocators'
// blocks and segments), CarriedVmm records (mappings, handle references) and CarriedPhase records
// (open phases) between a begin and an end, at the cut's time: every record before it is folded
// into the live set, none after it (LiveFolder), so a reader replays from it exactly.
void TraceWriter::write_checkpoint_locked(const Cut& cut) {
  const LiveSet& live = folder_->live();
  const uint64_t time = cut.time_ns;
  const uint32_t id = cut.checkpoint;
  format::CheckpointRecord begin;
  begin.time_ns = time;
  begin.id = id;
  begin.action = static_cast<uint32_t>(format::CheckpointAction::kBegin);
  if (!append_locked(checkpoints_, ChunkRole::kCheckpoints, begin)) return;
  uint64_t items = 0;
  bool whole = true;
  // Each carried record, until one does not fit: the checkpoint is then not whole, and not ended.
  const auto carry = [&](const auto& c) {
    if (!whole) return;
    whole = append_locked(checkpoints_, ChunkRole::kCheckpoints, c);
    items += whole ? 1 : 0;
  };
  live.for_each([&](const format::AllocRecord& a) {
    format::CarriedRecord c;
    c.time_ns = time;
    c.checkpoint = id;
    c.alloc_time_ns = a.time_ns;
    c.device = a.device;
    c.kind = a.kind;
    c.api = a.api;
    c.public_api = a.public_api;
    c.address = a.address;
    c.size = a.size;
    c.context = a.context;
    c.stack = a.stack;
    carry(c);
  });
  live.blocks().for_each([&](const format::BlockRecord& b) {
    format::CarriedBlockRecord c;
    c.time_ns = time;
    c.checkpoint = id;
    c.block_time_ns = b.time_ns;
    c.allocator = b.allocator;
    c.action = b.action;
    c.device = b.device;
    c.address = b.address;
    c.size = b.size;
    c.stream = b.stream;
    c.stack = b.stack;
    carry(c);
  });
  const auto carry_vmm = [&](format::CarriedVmmAction action, uint64_t handle,
                             const format::MapRecord* map) {
    format::CarriedVmmRecord c;
    c.time_ns = time;
    c.checkpoint = id;
    c.action = static_cast<uint32_t>(action);
    c.handle = handle;
    if (map != nullptr) {
      c.event_time_ns = map->time_ns;
      c.device = map->device;
      c.address = map->address;
      c.size = map->size;
      c.offset = map->offset;
    }
    carry(c);
  };
  live.vmm().for_each(
      [&](const format::MapRecord& m) { carry_vmm(format::CarriedVmmAction::kMap, m.handle, &m); },
      [&](uint64_t handle) { carry_vmm(format::CarriedVmmAction::kRetain, handle, nullptr); },
      [&](uint64_t handle) { carry_vmm(format::CarriedVmmAction::kRelease, handle, nullptr); });
  live.phases().for_each([&](const format::PhaseRecord& p) {
    format::CarriedPhaseRecord c;
    c.time_ns = time;
    c.checkpoint = id;
    c.phase_time_ns = p.time_ns;
    c.tid = p.tid;
    c.action = p.action;
    c.domain = p.domain;
    c.name = p.name;
    c.range = p.range;
    carry(c);
  });
  if (!whole) return;
  format::CheckpointRecord end = begin;
  end.action = static_cast<uint32_t>(format::CheckpointAction::kEnd);
  end.items = items;
  if (append_locked(checkpoints_, ChunkRole::kCheckpoints, end)) newest_whole_checkpoint_ = id;
}

namespace {

long membarrier(int command) {
  return syscall(__NR_membarrier, command, 0u, 0);
}

// How long a fold waits for a record in flight on another thread: a hook finishes one in well
// under a microsecond, so only a thread stopped or preempted mid-record waits this long.
constexpr auto kInFlightPatience = std::chrono::milliseconds(50);
// How long a thread that needs a chunk, at the limit with none to reuse, waits for a checkpoint
// before the file grows past the limit instead.
constexpr auto kCheckpointPatience = std::chrono::seconds(2);
// The checkpoint thread folds at most this often (a checkpoint that is due does not wait).
constexpr auto kFoldPeriod = std::chrono::milliseconds(2);

}  // namespace

// The checkpoint thread's membarrier() makes every other thread's in-flight mark visible before
// it reads them; where the kernel has none, the hooks set their marks with a full barrier instead
// (TraceWriter::InFlight).
void TraceWriter::start_fold_thread_locked() {
  if (!have_thread_exit_key_) {
    // Without it a thread's end is not told, and its cursor could not be forgotten.
    fold_broken_ = true;
    print_diagnostic(
        "a bounded trace needs a thread-specific key, and none is left: the trace "
        "keeps no checkpoints and grows past GPUMEMTRACE_MAX_SIZE");
    return;
  }
  fence_in_hooks_.store(membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0,
                        std::memory_order_relaxed);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t thread;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  fold_thread_started_ = pthread_create(&thread, &attr, &TraceWriter::fold_thread_main, this) == 0;
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void* TraceWriter::fold_thread_main(void* writer) {
  pthread_setname_np(pthread_self(), "gmt-checkpoint");
  DepthGuard forever;  // nothing this thread does is the program's
  this_thread_opens_nothing();
  static_cast<TraceWriter*>(writer)->fold_loop();
  return nullptr;
}

bool TraceWriter::take_cut_locked(Cut& cut) {
  // Strictly after every record stamped before the lock was taken (those of the chunks left
  // since the last checkpoint among them).
  const uint64_t before = now_ns();
  uint64_t time = now_ns();
  while (time <= before) time = now_ns();
  if (!fence_in_hooks_.load(std::memory_order_relaxed)) {
    membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
  } else {
    // The hooks' marks are sequentially consistent exchanges then; so is this, on a word of
    // our own (a full barrier, as theirs are).
    fold_wake_.fetch_add(0, std::memory_order_seq_cst);
  }
  // A thread that is not in flight now reads its next record's time after this moment.
  const auto deadline = std::chrono::steady_clock::now() + kInFlightPatience;
  for (const ThreadChunk* c : writing_) {
    while (__atomic_load_n(&c->in_flight, __ATOMIC_ACQUIRE) != 0) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      sched_yield();
    }
  }
  std::string why;
  if (!folder_->take_started(fd_, why)) {
    end_fold_locked(Cut{}, false, why);
    return false;
  }
  cut.time_ns = time;
  cut.checkpoint = 0;
  if (checkpoint_due_) {
    checkpoint_due_ = false;
    chunks_since_checkpoint_ = 0;
    cut.checkpoint = ++checkpoints_begun_;
  }
  return true;
}

void TraceWriter::end_fold_locked(const Cut& cut, bool folded, const std::string& why) {
  if (!folded) {
    if (!fold_broken_) {
      fold_broken_ = true;
      print_diagnostic("a bounded trace's checkpoints stop: " + why +
                       "; the trace grows past GPUMEMTRACE_MAX_SIZE from now on");
    }
  } else if (cut.checkpoint != 0 && !disabled_ && started()) {
    write_checkpoint_locked(cut);
  }
  if (cut.checkpoint != 0) last_checkpoint_ended_ = cut.checkpoint;
  checkpoint_ended_.notify_all();
}

void TraceWriter::fold_inline_locked() {
  if (fold_broken_ || disabled_ || !started()) return;
  Cut cut;
  if (!take_cut_locked(cut)) return;
  std::string why;
  const bool folded = folder_->fold(cut.time_ns, why);
  end_fold_locked(cut, folded, why);
}

void TraceWriter::fold_loop() {
  uint32_t seen = fold_wake_.load(std::memory_order_acquire);
  while (true) {
    fold_wake_.wait(seen, std::memory_order_acquire);
    seen = fold_wake_.load(std::memory_order_acquire);
    std::unique_lock<std::mutex> lock(mutex_);
    if (fold_broken_ || disabled_ || !started()) continue;
    Cut cut;
    if (!take_cut_locked(cut)) {
      lock.unlock();
      std::this_thread::sleep_for(kFoldPeriod);
      seen = fold_wake_.load(std::memory_order_acquire) - 1;  // try again
      continue;
    }
    lock.unlock();
    std::string why;
    const bool folded = folder_->fold(cut.time_ns, why);
    lock.lock();
    end_fold_locked(cut, folded, why);
    const bool due = checkpoint_due_;
    lock.unlock();
    if (!due) std::this_thread::sleep_for(kFoldPeriod);
  }
}

void TraceWriter::wait_for_checkpoint_locked() {
  checkpoint_due_ = true;
  if (!fold_thread_started_) {
    fold_inline_locked();
    return;
  }
  // One whose cut comes after now: a checkpoint already under way may make none reusable (the
  // chunks left since its cut are not in it).
  const uint32_t begun = checkpoints_begun_;
  request_fold();
  std::unique_lock<std::mutex> relock(mutex_, std::adopt_lock);
  checkpoint_ended_.wait_for(relock, kCheckpointPatience, [&] {
    return last_checkpoint_ended_ > begun || fold_broken_ || disabled_;
  });
  (void)relock.release();  // the caller's lock still holds it
}

}  // namespace gmt::interpose
