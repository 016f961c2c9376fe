// SPDX-License-Identifier: Apache-2.0
// The trace file and its writers (trace_writer.h): chunks filled, checksummed and written where
// the file hands them out; the modules every generated trace names.
#include "tests/bench/synthetic_trace/trace_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

namespace gmt::bench {
namespace {

// Module m of write_modules (trace_writer.h): the generators' stacks name modules by index, so
// the order is theirs.
constexpr std::array<std::string_view, 8> kModules = {
    "/usr/bin/python3.12",
    "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
    "/opt/venv/lib/python3.12/site-packages/torch/lib/libcudart.so.13",
    "/opt/venv/lib/python3.12/site-packages/torch/lib/libc10_cuda.so",
    "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so",
    "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_python.so",
    "/opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
    "/opt/venv/lib/python3.12/site-packages/nvidia/cublas/lib/libcublas.so.12"};

}  // namespace

TraceFile::TraceFile(const std::string& path, uint32_t chunk_size)
    : path_(path), chunk_size_(chunk_size) {
  fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
  uint8_t header[gmt::format::kFirstChunkOffset] = {};
  gmt::format::write_header(header, chunk_size);
  write_at(header, sizeof header, 0);
}

TraceFile::~TraceFile() {
  close(fd_);
}

uint64_t TraceFile::take_chunk_slot() {
  const uint64_t at = next_offset_;
  next_offset_ += chunk_size_;
  return at;
}

void TraceFile::write_at(const uint8_t* bytes, std::size_t size, uint64_t offset) {
  while (size > 0) {
    const ssize_t n = pwrite(fd_, bytes, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(errno));
    bytes += n;
    size -= static_cast<std::size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

void Writer::block(const gmt::format::BlockRecord& rec) {
  using gmt::format::BlockAction;
  const std::size_t capacity = chunk_.size() - gmt::format::kChunkHeaderSize;
  const gmt::format::BlockRecord& r = request_;
  if (open_ && rec.action == static_cast<uint32_t>(BlockAction::kFreeCompleted) &&
      request_end_ != 0 && request_end_ == used_ && used_ + 2 <= capacity &&
      r.address == rec.address && r.allocator == rec.allocator && r.device == rec.device &&
      r.size == rec.size && r.stream == rec.stream) {
    const uint8_t frame[2] = {static_cast<uint8_t>(gmt::format::RecordType::kBlockFreedAtOnce), 0};
    append(frame, sizeof frame);
    request_end_ = 0;  // one completion per request
    return;
  }
  record(rec);
  if (rec.action == static_cast<uint32_t>(BlockAction::kFreeRequested)) {
    request_ = rec;
    request_end_ = used_;
  }
}

void Writer::process_info(const gmt::format::ProcessInfoRecord& rec) {
  if (!open_) next_chunk();
  gmt::format::GrowableBuffer frame;
  gmt::format::encode_record(rec, codec_, frame);
  append(frame.data(), frame.size());
}

void Writer::flush() {
  if (!open_) return;
  using L = gmt::format::ChunkHeaderLayout;
  const uint8_t* payload = chunk_.data() + gmt::format::kChunkHeaderSize;
  put<uint32_t>(L::kMagic, gmt::format::kChunkMagic);
  put<uint32_t>(L::kWriter, id_);
  put<uint32_t>(L::kSequence, sequence_);
  put<uint32_t>(L::kThread, tid_);
  put<uint64_t>(L::kPublished,
                gmt::format::published_word(used_, gmt::format::extend_crc32c(0, payload, used_)));
  put<uint64_t>(L::kCounted, gmt::format::counted_word(used_, records_));
  file_.write_at(chunk_.data(), chunk_.size(), offset_);
  open_ = false;
  ++sequence_;
}

void Writer::next_chunk() {
  flush();
  offset_ = file_.take_chunk_slot();
  std::fill(chunk_.begin(), chunk_.end(), 0);
  used_ = 0;
  records_ = 0;
  request_end_ = 0;
  codec_ = gmt::format::CodecState{};
  open_ = true;
  if (sequence_ == 0) {
    // A writer's first chunk names its thread, as TraceWriter::write_thread_locked does.
    gmt::format::ThreadRecord thread;
    thread.time_ns = time_ns;
    thread.tid = tid_;
    thread.name = name_;
    record(thread);
  }
}

void Writer::append(const uint8_t* bytes, std::size_t size) {
  std::memcpy(chunk_.data() + gmt::format::kChunkHeaderSize + used_, bytes, size);
  used_ += static_cast<uint32_t>(size);
  ++records_;  // one record per append, as the preload library publishes them
}

void write_modules(Writer& w, uint64_t now) {
  for (std::size_t m = 0; m < kModules.size(); ++m) {
    gmt::format::ModuleRecord module;
    module.time_ns = now;
    module.path = std::string(kModules[m]);
    module.load_base = 0x7e0000000000ull + (m << 32);
    module.start = module.load_base;
    module.end = module.load_base + (64u << 20);
    module.build_id = "00112233445566778899aabbccddeeff0011223" + std::to_string(m);
    w.record(module);
  }
}

void write_process(Writer& w, uint64_t now, std::vector<std::string> argv) {
  gmt::format::ProcessInfoRecord info;
  info.pid = 4242;
  info.ppid = 4200;
  info.wall_start_ns = 1'700'000'000'000'000'000ull;
  info.mono_start_ns = 1'000'000'000;
  info.host = "bench-host";
  info.argv = std::move(argv);
  info.env = {"RANK=0", "LOCAL_RANK=0", "WORLD_SIZE=1"};
  w.process_info(info);
  write_modules(w, now);
}

}  // namespace gmt::bench
