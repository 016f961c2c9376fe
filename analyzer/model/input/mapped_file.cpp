// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/input/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "analyzer/model/input/trace_error.h"

namespace gmt::analyzer {

MappedFile::MappedFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw TraceError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    throw TraceError(path + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    throw TraceError(path + ": not a regular file");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    void* map = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      const int err = errno;
      close(fd);
      throw TraceError(path + ": cannot map: " + std::strerror(err));
    }
    data_ = static_cast<const uint8_t*>(map);
  }
  fd_ = fd;
}

bool MappedFile::copy(uint64_t offset, uint8_t* out, std::size_t n) const {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += static_cast<std::size_t>(got);
  }
  return true;
}

void MappedFile::release(uint64_t offset, uint64_t length) const {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  // Whole pages inside the range only: a page shared with bytes still in use stays.
  const uint64_t begin = (offset + page - 1) / page * page;
  const uint64_t end = std::min<uint64_t>(offset + length, size_) / page * page;
  if (data_ == nullptr || begin >= end) return;
  madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) munmap(const_cast<uint8_t*>(data_), size_);
  if (fd_ >= 0) close(fd_);
}

}  // namespace gmt::analyzer
