#include "interpose/record/trace_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "format/file_header.h"
#include "interpose/output_path.h"
#include "interpose/record/clock.h"
#include "interpose/record/process_info.h"

namespace gmt::interpose {
namespace {

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

void print_to_stderr(const std::string& message) {
  const std::string line = "gpumemtrace: " + message + "\n";
  write_all(STDERR_FILENO, reinterpret_cast<const uint8_t*>(line.data()), line.size());
}

std::string host_name() {
  char host[HOST_NAME_MAX + 1] = {};
  return gethostname(host, sizeof host - 1) == 0 ? host : "unknown-host";
}

}  // namespace

std::string TraceWriter::path() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return path_;
}

void TraceWriter::give_up_locked(const std::string& why) {
  print_to_stderr(why + "; this process (pid " + std::to_string(getpid()) +
                  ") runs on without tracing");
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  disabled_ = true;
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
        open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      fd_ = fd;
      path_ = candidate;
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
  codec_ = format::CodecState{};
  uint8_t header[format::kHeaderSize];
  format::write_header(header);
  format::GrowableBuffer frame;
  format::encode_record(capture_process_info(mono_start_ns_), codec_, frame);
  if (!write_all(fd_, header, sizeof header) || !write_all(fd_, frame.data(), frame.size())) {
    give_up_locked("cannot write trace file '" + path_ + "': " + std::strerror(errno));
    return false;
  }
  return true;
}

uint64_t TraceWriter::monotonic_since_start_locked() const {
  const uint64_t now = monotonic_ns();
  return now > mono_start_ns_ ? now - mono_start_ns_ : 0;
}

void TraceWriter::write_locked(const uint8_t* data, std::size_t size) {
  if (!write_all(fd_, data, size)) {
    give_up_locked("cannot write trace file '" + path_ + "': " + std::strerror(errno));
  }
}

void TraceWriter::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) return;
  format::EndRecord end;
  end.time_ns = monotonic_since_start_locked();
  format::FixedBuffer<32> frame;
  format::encode_record(end, codec_, frame);
  write_locked(frame.data(), frame.size());
}

void TraceWriter::after_fork_in_child() {
  // The lock was taken in before_fork by the thread that is now the child's only thread.
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  disabled_ = false;
  path_.clear();
  mutex_.unlock();
}

}  // namespace gmt::interpose
