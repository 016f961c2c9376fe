// SPDX-License-Identifier: Apache-2.0
// synthetic_trace: writes a large, realistic trace for timing the analyzer (scripts/
// bench-analyzer.sh), without a GPU and without running a program for minutes.
//
//   synthetic_trace --output PATH [--events N] [--stacks S] [--live L] [--threads T]
//                   [--devices D] [--seed X] [--chunk-size BYTES] [--vmm-one-in N]
//                   [--fail-one-in N]
//
// The bytes are the preload library's: the same header page, 64 KiB chunks (or --chunk-size:
// small ones make the small traces of the fuzzer's seed corpus) handed out to one
// writer (thread) at a time in file order, records framed by format/record_encoder.h with the
// per-chunk delta state reset at every chunk, and the published word (length, CRC-32) in each
// chunk's header. What it models is a caching allocator's steady state: after a ramp up to L
// live allocations, allocations and frees alternate around L, addresses come back from per-size
// free lists, every allocation names one of S stacks (defined, as the recorder does, by the
// thread that first uses it, just before), and a few VMM cycles, failed allocations and
// periodic view samples (from a sampler thread of its own) are mixed in. The random generator
// is seeded, so the same arguments always give the same file.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "format/chunk.h"
#include "format/file_header.h"
#include "format/record_encoder.h"
#include "format/records.h"

namespace {

using gmt::format::Api;
using gmt::format::MemoryKind;

struct Options {
  std::string output;
  uint64_t events = 10'000'000;
  uint32_t stacks = 2000;
  uint64_t live = 50'000;
  uint32_t threads = 4;
  int devices = 2;
  uint64_t seed = 1;
  uint32_t chunk_size = 64 * 1024;  // what the preload library writes
  uint64_t vmm_one_in = 5'000;      // of the events, how rare a VMM step and a failure are
  uint64_t fail_one_in = 100'000;
};

// SplitMix64: fast, and good enough to spread choices; the point is reproducibility.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return next() % n; }
  bool one_in(uint64_t n) { return below(n) == 0; }

 private:
  uint64_t state_;
};

// The file, and where its next chunk goes: chunks are handed out in file order as writers
// need them, so the chunks of different threads interleave as in a real trace.
class TraceFile {
 public:
  TraceFile(const std::string& path, uint32_t chunk_size) : path_(path), chunk_size_(chunk_size) {
    fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
    uint8_t header[gmt::format::kFirstChunkOffset] = {};
    gmt::format::write_header(header, chunk_size);
    write_at(header, sizeof header, 0);
  }
  ~TraceFile() { close(fd_); }
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  uint64_t take_chunk_slot() {
    const uint64_t at = next_offset_;
    next_offset_ += chunk_size_;
    return at;
  }
  uint32_t chunk_size() const { return chunk_size_; }
  void write_at(const uint8_t* bytes, std::size_t size, uint64_t offset) {
    while (size > 0) {
      const ssize_t n = pwrite(fd_, bytes, size, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(errno));
      bytes += n;
      size -= static_cast<std::size_t>(n);
      offset += static_cast<uint64_t>(n);
    }
  }
  uint64_t size() const { return next_offset_; }

 private:
  std::string path_;
  uint32_t chunk_size_;
  int fd_ = -1;
  uint64_t next_offset_ = gmt::format::kFirstChunkOffset;
};

// One thread of the traced process: its current chunk, filled as TraceWriter::record fills it.
// The CRC is computed once when the chunk is written out; the published word is the same as
// the one the preload library's per-record updates end with.
class Writer {
 public:
  Writer(TraceFile& file, uint32_t id, uint32_t tid, std::string name)
      : file_(file), id_(id), tid_(tid), name_(std::move(name)), chunk_(file.chunk_size(), 0) {}

  // A new chunk when the record's bound no longer fits, as TraceWriter::record decides. Chunks
  // smaller than a bound (seed traces of 4 KiB chunks, smaller than a stack's 8 KiB bound) go
  // by the record's actual size instead, where the preload library would drop the record.
  template <class R>
  void record(const R& rec) {
    constexpr std::size_t kMaxBytes = gmt::format::max_record_bytes<R>();
    const std::size_t capacity = chunk_.size() - gmt::format::kChunkHeaderSize;
    if (!open_) next_chunk();
    gmt::format::CodecState codec = codec_;
    gmt::format::FixedBuffer<kMaxBytes> frame;
    gmt::format::encode_record(rec, codec, frame);
    if (frame.overflowed() || frame.size() > capacity) {
      throw std::runtime_error("a record larger than its bound or than a chunk");
    }
    const std::size_t need = kMaxBytes <= capacity ? kMaxBytes : frame.size();
    if (used_ + need > capacity) {
      next_chunk();
      return record(rec);
    }
    codec_ = codec;
    append(frame.data(), frame.size());
  }
  // The process description is larger than an event's bound; the writer encodes it unbounded.
  void process_info(const gmt::format::ProcessInfoRecord& rec) {
    if (!open_) next_chunk();
    gmt::format::GrowableBuffer frame;
    gmt::format::encode_record(rec, codec_, frame);
    append(frame.data(), frame.size());
  }
  void flush() {
    if (!open_) return;
    using L = gmt::format::ChunkHeaderLayout;
    const uint8_t* payload = chunk_.data() + gmt::format::kChunkHeaderSize;
    put<uint32_t>(L::kMagic, gmt::format::kChunkMagic);
    put<uint32_t>(L::kWriter, id_);
    put<uint32_t>(L::kSequence, sequence_);
    put<uint32_t>(L::kThread, tid_);
    put<uint64_t>(L::kPublished, gmt::format::published_word(
                                     used_, gmt::format::extend_crc32c(0, payload, used_)));
    put<uint64_t>(L::kCounted, gmt::format::counted_word(used_, records_));
    file_.write_at(chunk_.data(), chunk_.size(), offset_);
    open_ = false;
    ++sequence_;
  }
  uint64_t time_ns = 0;  // of this thread's last record: a thread's records are in time order
  uint32_t tid() const { return tid_; }

 private:
  void next_chunk() {
    flush();
    offset_ = file_.take_chunk_slot();
    std::fill(chunk_.begin(), chunk_.end(), 0);
    used_ = 0;
    records_ = 0;
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
  void append(const uint8_t* bytes, std::size_t size) {
    std::memcpy(chunk_.data() + gmt::format::kChunkHeaderSize + used_, bytes, size);
    used_ += static_cast<uint32_t>(size);
    ++records_;  // one record per append, as the preload library publishes them
  }
  template <class T>
  void put(std::size_t at, T v) {
    std::memcpy(chunk_.data() + at, &v, sizeof v);
  }

  TraceFile& file_;
  uint32_t id_;
  uint32_t tid_;
  std::string name_;
  std::vector<uint8_t> chunk_;
  uint64_t offset_ = 0;
  uint32_t used_ = 0;
  uint32_t records_ = 0;
  uint32_t sequence_ = 0;
  bool open_ = false;
  gmt::format::CodecState codec_;
};

// Size classes of a caching allocator's blocks, from small scratch buffers to large weights,
// weighted toward the small ones.
constexpr std::array<uint64_t, 12> kSizeClasses = {512,       4096,      16384,      65536,
                                                   262144,    1u << 20,  2u << 20,   8u << 20,
                                                   20u << 20, 64u << 20, 128u << 20, 512u << 20};
constexpr std::array<uint32_t, 12> kSizeWeights = {30, 25, 15, 10, 8, 5, 3, 2, 1, 1, 0, 0};

struct Live {
  uint64_t address;
  int device;
  uint8_t size_class;
};

// A VMM cycle in progress: reservation, physical handle, mapping.
struct VmmBlock {
  uint64_t reservation;
  uint64_t handle;
  uint64_t size;
  int device;
};

class Generator {
 public:
  explicit Generator(const Options& o) : o_(o), rng_(o.seed), file_(o.output, o.chunk_size) {
    writers_.reserve(o.threads + 1);
    for (uint32_t t = 0; t < o.threads; ++t) {
      const std::string name = t == 0 ? "python" : "pt_worker_" + std::to_string(t);
      writers_.emplace_back(file_, t, 4000 + t, name);
    }
    // The sampler is a thread of its own in the recorder too.
    writers_.emplace_back(file_, o.threads, 4000 + o.threads, "gpumemtrace-smp");
    free_lists_.resize(static_cast<std::size_t>(o.devices) * kSizeClasses.size());
    next_address_.resize(static_cast<std::size_t>(o.devices));
    for (int d = 0; d < o.devices; ++d) {
      next_address_[static_cast<std::size_t>(d)] =
          0x7f0000000000ull + (static_cast<uint64_t>(d) << 38);
    }
    stack_defined_.assign(o.stacks + 1, false);
    for (uint32_t w : kSizeWeights) weight_total_ += w;
  }

  void run() {
    prologue();
    constexpr uint64_t kSampleEvery = 20'000;
    uint64_t next_sample = 0;
    constexpr uint64_t kPhaseEvery = 10'000;  // a training step, as an NVTX range
    uint64_t next_phase = 0;
    while (events_ < o_.events) {
      advance_clock();
      if (events_ >= next_sample) {
        sample();
        next_sample += kSampleEvery;
      }
      if (events_ >= next_phase) {
        phase();
        next_phase += kPhaseEvery;
      }
      if (rng_.one_in(o_.fail_one_in)) {
        failed_allocation();
      } else if (rng_.one_in(o_.vmm_one_in)) {
        vmm_step();
      } else if (wants_alloc()) {
        allocate();
      } else {
        free_one();
      }
    }
    epilogue();
    for (Writer& w : writers_) w.flush();
  }

  uint64_t file_size() const { return file_.size(); }
  uint64_t events() const { return events_; }

 private:
  Writer& thread() { return writers_[rng_.below(o_.threads)]; }
  Writer& sampler() { return writers_.back(); }
  Writer& stamp(Writer& w) {
    w.time_ns = now_;
    return w;
  }
  void advance_clock() { now_ += 200 + rng_.below(1800); }

  void prologue() {
    Writer& main = stamp(writers_[0]);
    gmt::format::ProcessInfoRecord info;
    info.pid = 4242;
    info.ppid = 4200;
    info.wall_start_ns = 1'700'000'000'000'000'000ull;
    info.mono_start_ns = 1'000'000'000;
    info.host = "bench-host";
    info.argv = {"python", "train.py", "--synthetic"};
    info.env = {"RANK=0", "LOCAL_RANK=0", "WORLD_SIZE=1"};
    main.process_info(info);
    // Modules: the program, the CUDA libraries, a framework; stacks point into them.
    static constexpr std::array<std::string_view, 8> kModules = {
        "/usr/bin/python3.12",
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        "/opt/venv/lib/python3.12/site-packages/torch/lib/libcudart.so.13",
        "/opt/venv/lib/python3.12/site-packages/torch/lib/libc10_cuda.so",
        "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so",
        "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_python.so",
        "/opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
        "/opt/venv/lib/python3.12/site-packages/nvidia/cublas/lib/libcublas.so.12"};
    for (std::size_t m = 0; m < kModules.size(); ++m) {
      gmt::format::ModuleRecord module;
      module.time_ns = now_;
      module.path = std::string(kModules[m]);
      module.load_base = 0x7e0000000000ull + (m << 32);
      module.start = module.load_base;
      module.end = module.load_base + (64u << 20);
      module.build_id = "00112233445566778899aabbccddeeff0011223" + std::to_string(m);
      main.record(module);
    }
    gmt::format::NameRecord step;
    step.time_ns = now_;
    step.id = 1;
    step.text = "train_step";
    main.record(step);
    gmt::format::NoteRecord note;
    note.time_ns = now_;
    note.text = "synthetic trace: no real process ran";
    main.record(note);
    for (int d = 0; d < o_.devices; ++d) {
      gmt::format::ContextRecord context;
      context.time_ns = now_;
      context.id = static_cast<uint32_t>(d) + 1;
      context.handle = 0x5500000000ull + static_cast<uint64_t>(d) * 0x1000;
      context.device = d;
      main.record(context);
      gmt::format::DeviceRecord device;
      device.time_ns = now_;
      device.device = d;
      device.pci_bus_id = "0000:1" + std::to_string(d) + ":00.0";
      device.nvml_index = d;
      device.name = "NVIDIA H200";
      device.total_bytes = 143'771'000'832ull;
      stamp(sampler()).record(device);
    }
  }

  // Ends the process normally; a few exit-time frees follow the End record, as they do when a
  // framework frees its cache from a static destructor.
  void epilogue() {
    advance_clock();
    gmt::format::EndRecord end;
    end.time_ns = now_;
    stamp(writers_[0]).record(end);
    for (int i = 0; i < 10 && !live_.empty(); ++i) {
      advance_clock();
      free_one();
    }
    // The last release of each primary context takes what is still allocated in it.
    for (int d = 0; d < o_.devices; ++d) {
      advance_clock();
      gmt::format::ContextDestroyedRecord destroyed;
      destroyed.time_ns = now_;
      destroyed.id = static_cast<uint32_t>(d) + 1;
      destroyed.api = Api::kCuDevicePrimaryCtxRelease;
      stamp(writers_[0]).record(destroyed);
      ++events_;
    }
  }

  // Training steps as NVTX ranges on the main thread: one closes and the next opens.
  void phase() {
    Writer& main = stamp(writers_[0]);
    gmt::format::PhaseRecord p;
    p.time_ns = now_;
    p.tid = main.tid();
    if (phase_open_) {
      p.action = static_cast<uint32_t>(gmt::format::PhaseAction::kPop);
      main.record(p);
    }
    p.action = static_cast<uint32_t>(gmt::format::PhaseAction::kPush);
    p.name = 1;
    main.record(p);
    phase_open_ = true;
  }

  bool wants_alloc() {
    // Ramp up, then hover around the live set: the further below it, the likelier an allocation.
    if (live_.size() < o_.live / 2) return true;
    if (live_.empty()) return true;
    const uint64_t target = o_.live;
    const uint64_t p = live_.size() >= 2 * target ? 0 : (2 * target - live_.size()) * 500 / target;
    return rng_.below(1000) < p;  // 50 % at exactly the live set
  }

  uint8_t pick_size_class() {
    uint64_t r = rng_.below(weight_total_);
    for (std::size_t c = 0; c < kSizeWeights.size(); ++c) {
      if (r < kSizeWeights[c]) return static_cast<uint8_t>(c);
      r -= kSizeWeights[c];
    }
    return 0;
  }

  // Stacks follow a skewed popularity, as real call sites do: a few hot ones, a long tail.
  uint32_t pick_stack(Writer& w) {
    const uint64_t a = rng_.below(o_.stacks), b = rng_.below(o_.stacks);
    const auto id = static_cast<uint32_t>(std::min(a, b) + 1);
    if (!stack_defined_[id]) {
      stack_defined_[id] = true;
      gmt::format::StackRecord stack;
      stack.time_ns = now_;
      stack.id = id;
      Rng frames(o_.seed * 7919 + id);
      const std::size_t depth = 16 + frames.below(24);
      for (std::size_t f = 0; f < depth; ++f) {
        const uint64_t module = f < 2 ? 1 + f : 3 + frames.below(5);
        stack.frames.push_back(0x7e0000000000ull + (module << 32) + 0x1000 +
                               frames.below(48u << 20));
      }
      w.record(stack);
    }
    return id;
  }

  void allocate() {
    Writer& w = stamp(thread());
    const int device = static_cast<int>(rng_.below(static_cast<uint64_t>(o_.devices)));
    const uint8_t c = pick_size_class();
    auto& free_list = free_lists_[static_cast<std::size_t>(device) * kSizeClasses.size() + c];
    uint64_t address;
    if (!free_list.empty() && !rng_.one_in(20)) {
      address = free_list.back();  // a caching allocator hands back its most recent block
      free_list.pop_back();
    } else {
      address = next_address_[static_cast<std::size_t>(device)];
      next_address_[static_cast<std::size_t>(device)] += kSizeClasses[c];
    }
    gmt::format::AllocRecord a;
    a.time_ns = now_;
    a.device = device;
    const bool async = rng_.one_in(4);
    a.kind = async ? MemoryKind::kStreamOrdered : MemoryKind::kDevice;
    a.api = async ? Api::kCuMemAllocAsync : Api::kCudaMalloc;
    a.address = address;
    a.size = kSizeClasses[c] - (c > 2 ? 0 : rng_.below(256));
    a.context = static_cast<uint32_t>(device) + 1;
    a.stack = pick_stack(w);
    w.record(a);
    live_.push_back(Live{address, device, c});
    ++events_;
  }

  void free_one() {
    if (live_.empty()) return;
    Writer& w = stamp(thread());
    const std::size_t i = rng_.below(live_.size());
    const Live l = live_[i];
    live_[i] = live_.back();
    live_.pop_back();
    gmt::format::FreeRecord f;
    f.time_ns = now_;
    f.api = Api::kCudaFree;
    f.address = l.address;
    w.record(f);
    free_lists_[static_cast<std::size_t>(l.device) * kSizeClasses.size() + l.size_class].push_back(
        l.address);
    ++events_;
  }

  void failed_allocation() {
    Writer& w = stamp(thread());
    gmt::format::AllocFailedRecord f;
    f.time_ns = now_;
    f.device = static_cast<int>(rng_.below(static_cast<uint64_t>(o_.devices)));
    f.kind = MemoryKind::kDevice;
    f.api = Api::kCudaMalloc;
    f.size = 200ull << 30;
    f.error = 2;  // CUDA_ERROR_OUT_OF_MEMORY
    f.stack = pick_stack(w);
    w.record(f);
    ++events_;
  }

  // cuMemAddressReserve + cuMemCreate + cuMemMap, and later the reverse, as expandable segments
  // and NCCL do; at most a handful are live.
  void vmm_step() {
    Writer& w = stamp(thread());
    if (vmm_.size() >= 8 || (!vmm_.empty() && rng_.one_in(2))) {
      const VmmBlock b = vmm_.front();
      vmm_.pop_front();
      gmt::format::UnmapRecord unmap;
      unmap.time_ns = now_;
      unmap.address = b.reservation;
      unmap.size = b.size;
      w.record(unmap);
      gmt::format::FreeRecord release;
      release.time_ns = now_;
      release.api = Api::kCuMemRelease;
      release.address = b.handle;
      w.record(release);
      gmt::format::FreeRecord address_free;
      address_free.time_ns = now_;
      address_free.api = Api::kCuMemAddressFree;
      address_free.address = b.reservation;
      w.record(address_free);
      events_ += 3;
      return;
    }
    VmmBlock b;
    b.device = static_cast<int>(rng_.below(static_cast<uint64_t>(o_.devices)));
    b.size = 2ull << 20;
    b.reservation = 0x7d0000000000ull + (++vmm_serial_ << 24);
    b.handle = 0x100000 + vmm_serial_;
    const uint32_t stack = pick_stack(w);
    gmt::format::AllocRecord reserve;
    reserve.time_ns = now_;
    reserve.device = -1;
    reserve.kind = MemoryKind::kVmmReservation;
    reserve.api = Api::kCuMemAddressReserve;
    reserve.address = b.reservation;
    reserve.size = b.size;
    reserve.stack = stack;
    w.record(reserve);
    gmt::format::AllocRecord create;
    create.time_ns = now_;
    create.device = b.device;
    create.kind = MemoryKind::kVmmPhysical;
    create.api = Api::kCuMemCreate;
    create.address = b.handle;
    create.size = b.size;
    create.context = static_cast<uint32_t>(b.device) + 1;
    create.stack = stack;
    w.record(create);
    gmt::format::MapRecord map;
    map.time_ns = now_;
    map.device = b.device;
    map.address = b.reservation;
    map.size = b.size;
    map.handle = b.handle;
    w.record(map);
    vmm_.push_back(b);
    events_ += 3;
  }

  // The sampler's periodic look at every device: driver and NVML views near the tracked bytes.
  void sample() {
    Writer& w = stamp(sampler());
    for (int d = 0; d < o_.devices; ++d) {
      gmt::format::SampleRecord s;
      s.time_ns = now_;
      s.device = d;
      s.reason = static_cast<uint32_t>(gmt::format::SampleReason::kPeriodic);
      s.present = gmt::format::kNvmlDeviceUsed | gmt::format::kNvmlDeviceTotal |
                  gmt::format::kDriverFree | gmt::format::kDriverTotal;
      s.read_ns = 20'000;
      s.nvml_device_total = s.driver_total = 143'771'000'832ull;
      s.nvml_device_used = (8ull << 30) + rng_.below(1ull << 30);
      s.driver_free = s.driver_total - s.nvml_device_used;
      w.record(s);
    }
  }

  const Options o_;
  Rng rng_;
  TraceFile file_;
  std::vector<Writer> writers_;
  std::vector<Live> live_;
  std::vector<std::vector<uint64_t>> free_lists_;  // by device and size class
  std::vector<uint64_t> next_address_;             // by device
  std::vector<bool> stack_defined_;
  std::deque<VmmBlock> vmm_;
  uint64_t vmm_serial_ = 0;
  bool phase_open_ = false;
  uint64_t weight_total_ = 0;
  uint64_t now_ = 1000;
  uint64_t events_ = 0;
};

uint64_t parse_count(const char* flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') {
    throw std::runtime_error(std::string(flag) + ": not a number: " + text);
  }
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) throw std::runtime_error(std::string(flag) + " needs a value");
    const char* value = argv[++i];
    if (flag == "--output") {
      o.output = value;
    } else if (flag == "--events") {
      o.events = parse_count(argv[i - 1], value);
    } else if (flag == "--stacks") {
      o.stacks = static_cast<uint32_t>(parse_count(argv[i - 1], value));
    } else if (flag == "--live") {
      o.live = parse_count(argv[i - 1], value);
    } else if (flag == "--threads") {
      o.threads = static_cast<uint32_t>(parse_count(argv[i - 1], value));
    } else if (flag == "--devices") {
      o.devices = static_cast<int>(parse_count(argv[i - 1], value));
    } else if (flag == "--seed") {
      o.seed = parse_count(argv[i - 1], value);
    } else if (flag == "--vmm-one-in") {
      o.vmm_one_in = parse_count(argv[i - 1], value);
    } else if (flag == "--fail-one-in") {
      o.fail_one_in = parse_count(argv[i - 1], value);
    } else if (flag == "--chunk-size") {
      o.chunk_size = static_cast<uint32_t>(parse_count(argv[i - 1], value));
    } else {
      throw std::runtime_error("unknown option " + std::string(flag));
    }
  }
  if (o.output.empty()) throw std::runtime_error("--output PATH is required");
  if (o.vmm_one_in == 0 || o.fail_one_in == 0) throw std::runtime_error("--*-one-in: 1 or more");
  if (o.stacks == 0 || o.live == 0 || o.threads == 0 || o.devices <= 0 || o.devices > 64) {
    throw std::runtime_error("--stacks, --live and --threads must be positive, --devices 1..64");
  }
  const uint32_t c = o.chunk_size;
  if (c < gmt::format::kMinChunkSize || c > gmt::format::kMaxChunkSize || (c & (c - 1)) != 0) {
    throw std::runtime_error("--chunk-size must be a power of two from 4 KiB to 16 MiB");
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options options = parse(argc, argv);
    Generator generator(options);
    generator.run();
    std::printf("{\"path\": \"%s\", \"events\": %llu, \"file_bytes\": %llu}\n",
                options.output.c_str(), static_cast<unsigned long long>(generator.events()),
                static_cast<unsigned long long>(generator.file_size()));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "synthetic_trace: %s\n", e.what());
    std::fprintf(stderr,
                 "usage: synthetic_trace --output PATH [--events N] [--stacks S] [--live L] "
                 "[--threads T] [--devices D] [--seed X] [--chunk-size BYTES] [--vmm-one-in N] "
                 "[--fail-one-in N]\n");
    return 2;
  }
}
