// Appends records to this process's trace file. The file is created on the first record, so a
// process that never uses CUDA leaves nothing behind.
//
// Each record goes to the kernel with one write() as soon as it is made: what a hook recorded
// is in the page cache before the hook returns, so it survives SIGKILL, a crash or _exit.
// (The recorder issue replaces this with per-thread chunks of a shared mapping; callers only
// see record().)
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <string>

#include "format/record_encoder.h"
#include "format/records.h"
#include "interpose/config.h"

namespace gmt::interpose {

class TraceWriter {
 public:
  explicit TraceWriter(const Config& config) : config_(config) {}
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Stamps the record's time, then writes it; the stamp and the position in the file are taken
  // under one lock so that file order is time order.
  template <class R>
  void record(R& rec) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!ensure_open_locked()) return;
    rec.time_ns = monotonic_since_start_locked();
    format::FixedBuffer<128> frame;
    format::encode_record(rec, codec_, frame);
    write_locked(frame.data(), frame.size());
  }

  // Marks a normal exit. Only if a trace was started: exiting creates no file.
  void finish();

  // fork() support: the child must not share our descriptor or our lock state.
  void before_fork() { mutex_.lock(); }
  void after_fork_in_parent() { mutex_.unlock(); }
  void after_fork_in_child();

  // The file being written, empty before the first record.
  std::string path() const;

 private:
  bool ensure_open_locked();
  bool create_file_locked(const std::string& path);
  uint64_t monotonic_since_start_locked() const;
  void write_locked(const uint8_t* data, std::size_t size);
  void give_up_locked(const std::string& why);

  const Config& config_;
  mutable std::mutex mutex_;
  int fd_ = -1;
  bool disabled_ = false;  // creating or writing the file failed: the program runs on untraced
  std::string path_;
  uint64_t mono_start_ns_ = 0;
  format::CodecState codec_;
};

}  // namespace gmt::interpose
