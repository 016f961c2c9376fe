// SPDX-License-Identifier: Apache-2.0
#include "interpose/record/trace_writer.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "format/chunk.h"
#include "format/file_header.h"
#include "interpose/common/diagnostic.h"
#include "interpose/common/instance_id.h"
#include "interpose/common/thread_id.h"
#include "interpose/output_path.h"
#include "interpose/record/process_info.h"

namespace gmt::interpose {

thread_local TraceChunkCursor TraceWriter::thread_chunk_;

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

}  // namespace

TraceWriter::TraceWriter(const Config& config) : config_(config), generation_(new_generation()) {
  have_thread_exit_key_ = pthread_key_create(&thread_exit_key_, &TraceWriter::on_thread_exit) == 0;
}

void TraceWriter::on_thread_exit(void* writer) {
  auto* self = static_cast<TraceWriter*>(writer);
  std::lock_guard<std::mutex> lock(self->mutex_);
  ThreadChunk& chunk = thread_chunk();
  if (chunk.base != nullptr &&
      chunk.generation == self->generation_.load(std::memory_order_relaxed)) {
    seal(chunk);
    self->unmap_locked(chunk.base);
  }
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
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  disabled_ = true;
  generation_.store(new_generation(), std::memory_order_release);  // no thread keeps writing
}

// O_EXCL and O_NOFOLLOW: never overwrite a trace, never write through a planted symlink. A
// name already taken (a reused pid, or a pattern without %p) gets the pid appended, then a
// counter, rather than losing either file.
bool TraceWriter::create_file_locked(const std::string& base) {
  const std::string pid = std::to_string(getpid());
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string candidate = base;
    if (attempt == 1) candidate += "." + pid;
    if (attempt > 1) candidate += "." + pid + "." + std::to_string(attempt - 1);
    const int fd =
        open(candidate.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      fd_ = fd;
      path_ = candidate;
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
  if (fd_ >= 0) return true;
  if (disabled_) return false;
  const OutputPathVars vars{getpid(), host_name(), rank_from_environment()};
  if (!create_file_locked(expand_output_pattern(config_.output_pattern, vars))) return false;
  mono_start_ns_ = monotonic_ns();
  uint8_t header[format::kFirstChunkOffset] = {};
  format::write_header(header, kChunkSize);
  if (!write_all(fd_, header, sizeof header)) {
    give_up_locked("cannot write trace file '" + path_ + "': " + std::strerror(errno));
    return false;
  }
  file_size_ = next_offset_ = format::kFirstChunkOffset;
  next_writer_ = 0;
  generation_.store(new_generation(), std::memory_order_release);
  return true;
}

// Disk space is allocated for real (not a sparse hole) before a chunk is handed out: writing
// through a mapping into a full disk would raise SIGBUS in the program.
bool TraceWriter::new_chunk_locked(ThreadChunk& chunk) {
  if (next_offset_ + kChunkSize > file_size_) {
    const uint64_t grow = 16 * static_cast<uint64_t>(kChunkSize);
    const int err = posix_fallocate(fd_, static_cast<off_t>(file_size_), static_cast<off_t>(grow));
    if (err != 0) {
      give_up_locked("cannot grow trace file '" + path_ + "': " + std::strerror(err));
      return false;
    }
    file_size_ += grow;
  }
  void* map = mmap(nullptr, kChunkSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd_,
                   static_cast<off_t>(next_offset_));
  if (map == MAP_FAILED) {
    give_up_locked("cannot map trace file '" + path_ + "': " + std::strerror(errno));
    return false;
  }
  mapped_.push_back(map);
  next_offset_ += kChunkSize;
  const uint32_t generation = generation_.load(std::memory_order_relaxed);
  if (chunk.generation != generation || chunk.base == nullptr) {
    chunk.writer = next_writer_++;
    chunk.sequence = 0;
    // Ask to be told when this thread ends (the value only has to be non-null).
    if (have_thread_exit_key_) pthread_setspecific(thread_exit_key_, this);
  } else {
    seal(chunk);
    unmap_locked(chunk.base);  // the full chunk this thread leaves
    ++chunk.sequence;
  }
  chunk.base = static_cast<uint8_t*>(map);
  chunk.used = 0;
  chunk.crc = 0;
  chunk.records = 0;
  chunk.generation = generation;
  chunk.codec = format::CodecState{};
  using L = format::ChunkHeaderLayout;
  store_le<uint32_t>(chunk.base + L::kWriter, chunk.writer);
  store_le<uint32_t>(chunk.base + L::kSequence, chunk.sequence);
  store_le<uint32_t>(chunk.base + L::kThread, static_cast<uint32_t>(thread_id()));
  // The magic last: a chunk with a magic is one a reader may look into.
  __atomic_store_n(reinterpret_cast<uint32_t*>(chunk.base + L::kMagic), format::kChunkMagic,
                   __ATOMIC_RELEASE);
  return true;
}

void TraceWriter::write_process_info_locked(ThreadChunk& chunk) {
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
  format::FixedBuffer<format::max_record_bytes<format::ThreadRecord>()> frame;
  format::encode_record(rec, chunk.codec, frame);
  if (!frame.overflowed()) append(chunk, frame.data(), frame.size());
}

bool TraceWriter::attach(ThreadChunk& chunk, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const bool first = fd_ < 0;
  if (!ensure_open_locked()) return false;
  if (usable(chunk, bytes)) return true;  // another path got here first (after fork, say)
  if (!new_chunk_locked(chunk)) return false;
  if (first) write_process_info_locked(chunk);
  if (chunk.sequence == 0) write_thread_locked(chunk);
  return usable(chunk, bytes) || (new_chunk_locked(chunk) && usable(chunk, bytes));
}

void TraceWriter::append(ThreadChunk& chunk, const uint8_t* bytes, std::size_t size) {
  uint8_t* at = chunk.base + kChunkHeader + chunk.used;
  std::memcpy(at, bytes, size);
  publish(chunk, at, size);
}

void TraceWriter::publish(ThreadChunk& chunk, const uint8_t* bytes, std::size_t size) {
  chunk.crc = format::extend_crc32c(chunk.crc, bytes, size);
  chunk.used += static_cast<uint32_t>(size);
  ++chunk.records;  // every publish is one record; the header gets the count in seal()
  // One 8-byte store makes length and checksum visible together, after the bytes.
  __atomic_store_n(reinterpret_cast<uint64_t*>(chunk.base + format::ChunkHeaderLayout::kPublished),
                   format::published_word(chunk.used, chunk.crc), __ATOMIC_RELEASE);
}

void TraceWriter::finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fd_ < 0) return;
  }
  format::EndRecord end;
  record(end);
  std::lock_guard<std::mutex> lock(mutex_);
  ThreadChunk& chunk = thread_chunk();  // the one that holds the end
  if (chunk.base != nullptr && chunk.generation == generation_.load(std::memory_order_relaxed))
    seal(chunk);
  // Give back the disk space reserved for chunks that were never handed out. Exit-time frees
  // that still come find the file grown again on demand.
  if (fd_ >= 0 && ftruncate(fd_, static_cast<off_t>(next_offset_)) == 0) file_size_ = next_offset_;
}

void TraceWriter::after_fork_in_child() {
  // The lock was taken in before_fork by the thread that is now the child's only thread. The
  // parent's chunks are shared mappings: unmap them so that nothing here can write into them.
  for (void* map : mapped_) munmap(map, kChunkSize);
  mapped_.clear();
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  disabled_ = false;
  started_.store(false, std::memory_order_release);
  path_.clear();
  generation_.store(new_generation(), std::memory_order_release);
  thread_chunk() = ThreadChunk{};
  mutex_.unlock();
}

}  // namespace gmt::interpose
