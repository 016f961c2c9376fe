// SPDX-License-Identifier: Apache-2.0
// synthetic_trace: writes a large, realistic trace for timing the analyzer (scripts/
// bench-analyzer.sh), without a GPU and without running a program for minutes.
//
//   synthetic_trace --output PATH [--events N] [--stacks S] [--live L] [--threads T]
//                   [--devices D] [--seed X] [--chunk-size BYTES] [--vmm-one-in N]
//                   [--fail-one-in N] [--framework-blocks]
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
//
// --framework-blocks models instead what a PyTorch program traced with its block events and the
// roles hooks (python/gpumemtrace_roles.py) writes: torchvision's ResNet-50 trained with AMP and
// SGD with momentum, behind a caching allocator shaped like PyTorch's (segments of 2 MiB for
// requests up to 1 MiB, 20 MiB up to 10 MiB, larger ones their own, rounded to 2 MiB; blocks
// split from them best fit, merged when freed), on one device. Its records are those of the
// recorder and the hooks, in their order: each segment's cudaMalloc (an Alloc record) then its
// kSegmentAlloc, then the block's kAlloc; each free's request and its completion, written as a
// BlockFreedAtOnce record when it follows the request in the chunk; the parameters and buffers
// tagged at the first forward (their names interned then, as the hooks do), every module's
// forward as nested Scope records in the root's first three forwards and one in sixteen (the
// others in outline), the backward's blocks on an autograd thread of their own, the gradients
// tagged after each backward, the optimizer's state tagged after its first step. --events N:
// whole steps until at least N events (its Block, Scope, Tag and Alloc records; the JSON it
// prints counts each kind); --stacks, --live, --threads, --devices, --vmm-one-in and
// --fail-one-in do not apply.
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
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "format/chunk.h"
#include "format/file_header.h"
#include "format/record_encoder.h"
#include "format/records.h"

namespace {

using gmt::format::Api;
using gmt::format::BlockAction;
using gmt::format::MemoryKind;
using gmt::format::ScopeAction;
using gmt::format::ScopeKind;
using gmt::format::TagRole;

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
  bool framework_blocks = false;  // PyTorch's block events and the roles hooks' records instead
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
  // A caching allocator's block event, as TraceWriter::write_block writes it: a completed free
  // right after its own request in this chunk, nothing between them, is the two bytes of a
  // BlockFreedAtOnce record (format 4.7).
  void block(const gmt::format::BlockRecord& rec) {
    using gmt::format::BlockAction;
    const std::size_t capacity = chunk_.size() - gmt::format::kChunkHeaderSize;
    const gmt::format::BlockRecord& r = request_;
    if (open_ && rec.action == static_cast<uint32_t>(BlockAction::kFreeCompleted) &&
        request_end_ != 0 && request_end_ == used_ && used_ + 2 <= capacity &&
        r.address == rec.address && r.allocator == rec.allocator && r.device == rec.device &&
        r.size == rec.size && r.stream == rec.stream) {
      const uint8_t frame[2] = {static_cast<uint8_t>(gmt::format::RecordType::kBlockFreedAtOnce),
                                0};
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
  gmt::format::BlockRecord request_;  // the last free request, and `used_` just after it (0: none)
  uint32_t request_end_ = 0;
};

// Modules: the program, the CUDA libraries, a framework; stacks point into them. Module m is
// loaded at 0x7e0000000000 + (m << 32), 64 MiB long.
constexpr std::array<std::string_view, 8> kModules = {
    "/usr/bin/python3.12",
    "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
    "/opt/venv/lib/python3.12/site-packages/torch/lib/libcudart.so.13",
    "/opt/venv/lib/python3.12/site-packages/torch/lib/libc10_cuda.so",
    "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so",
    "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_python.so",
    "/opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
    "/opt/venv/lib/python3.12/site-packages/nvidia/cublas/lib/libcublas.so.12"};

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
    write_modules(main, now_);
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

// --framework-blocks: PyTorch's caching allocator as tests/workloads/caching_allocator.cpp
// models it (and the analyzer's block extents expect): segments of 2 MiB for requests up to
// 1 MiB, 20 MiB below 10 MiB, larger ones their own size rounded up to 2 MiB; blocks rounded up
// to 512 bytes, taken best fit from the free blocks of their pool, the rest split off when worth
// a block (anything in the small pool, more than 1 MiB in the large one), merged with their free
// neighbours when freed; segments never given back. It hands out addresses; the generator
// writes the records.
class TorchAllocator {
 public:
  static constexpr uint64_t kMiB = 1024 * 1024;

  struct Taken {
    uint64_t address = 0;
    uint64_t segment = 0;  // a segment taken from CUDA for this block (cudaMalloc), else 0
    uint64_t segment_size = 0;
  };

  explicit TorchAllocator(uint64_t base) : next_segment_(base) {}

  Taken allocate(uint64_t bytes) {
    const uint64_t size =
        bytes < kMinBlock ? kMinBlock : (bytes + kMinBlock - 1) / kMinBlock * kMinBlock;
    const bool small = size <= kSmallSize;
    Taken t;
    const auto fit = free_.lower_bound({{small, size}, 0});
    if (fit != free_.end() && fit->first.first == small) {
      t.address = fit->second;
      free_.erase(fit);
    } else {
      t.segment_size = small ? kSmallSegment
                       : size < kMinLargeAlloc
                           ? kLargeSegment
                           : (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
      t.segment = t.address = next_segment_;
      next_segment_ += t.segment_size;
      reserved_ += t.segment_size;
      blocks_[t.address] = Block{t.segment_size, t.address, 0, false, small};
    }
    Block& b = blocks_.at(t.address);
    const uint64_t rest = b.size - size;
    if (small ? rest >= kMinBlock : rest > kSmallSize) {
      blocks_[t.address + size] = Block{rest, b.segment, 0, false, small};
      free_.insert({{small, rest}, t.address + size});
      b.size = size;
    }
    b.allocated = true;
    b.requested = bytes;
    return t;
  }

  // Frees the block at `address`, in use; returns the size its events give: the size asked for.
  uint64_t free(uint64_t address) {
    auto it = blocks_.find(address);
    if (it == blocks_.end() || !it->second.allocated) {
      throw std::logic_error("synthetic_trace: a free of no block in use");
    }
    const uint64_t requested = it->second.requested;
    it->second.allocated = false;
    const auto next = std::next(it);
    if (next != blocks_.end() && !next->second.allocated &&
        next->second.segment == it->second.segment) {
      free_.erase({{next->second.small, next->second.size}, next->first});
      it->second.size += next->second.size;
      blocks_.erase(next);
    }
    if (it != blocks_.begin()) {
      const auto prev = std::prev(it);
      if (!prev->second.allocated && prev->second.segment == it->second.segment) {
        free_.erase({{prev->second.small, prev->second.size}, prev->first});
        prev->second.size += it->second.size;
        blocks_.erase(it);
        it = prev;
      }
    }
    free_.insert({{it->second.small, it->second.size}, it->first});
    return requested;
  }

  uint64_t reserved() const { return reserved_; }

 private:
  static constexpr uint64_t kMinBlock = 512;
  static constexpr uint64_t kSmallSize = 1 * kMiB;
  static constexpr uint64_t kSmallSegment = 2 * kMiB;
  static constexpr uint64_t kLargeSegment = 20 * kMiB;
  static constexpr uint64_t kMinLargeAlloc = 10 * kMiB;
  static constexpr uint64_t kRoundLarge = 2 * kMiB;

  struct Block {
    uint64_t size;
    uint64_t segment;  // the address of its segment
    uint64_t requested;
    bool allocated;
    bool small;
  };
  std::map<uint64_t, Block> blocks_;  // every block, by address
  // Free blocks by (pool, size, address): best fit is the first of its pool at or above a size.
  std::set<std::pair<std::pair<bool, uint64_t>, uint64_t>> free_;
  uint64_t next_segment_;
  uint64_t reserved_ = 0;
};

// Python code objects the main thread's stacks name (PythonCodeRecord ids from 1, in order).
struct PythonCode {
  std::string_view name;
  std::string_view file;
};
constexpr std::string_view kSitePackages = "/opt/venv/lib/python3.12/site-packages/";
constexpr std::array<PythonCode, 22> kPythonCodes = {{
    {"<module>", "train.py"},
    {"main", "train.py"},
    {"train_one_epoch", "train.py"},
    {"call", "<gpumemtrace>/gpumemtrace_roles.py"},
    {"Module._call_impl", "torch/nn/modules/module.py"},
    {"ResNet.forward", "torchvision/models/resnet.py"},
    {"ResNet._forward_impl", "torchvision/models/resnet.py"},
    {"Sequential.forward", "torch/nn/modules/container.py"},
    {"Bottleneck.forward", "torchvision/models/resnet.py"},
    {"Conv2d.forward", "torch/nn/modules/conv.py"},
    {"Conv2d._conv_forward", "torch/nn/modules/conv.py"},
    {"_BatchNorm.forward", "torch/nn/modules/batchnorm.py"},
    {"batch_norm", "torch/nn/functional.py"},
    {"MaxPool2d.forward", "torch/nn/modules/pooling.py"},
    {"AdaptiveAvgPool2d.forward", "torch/nn/modules/pooling.py"},
    {"Linear.forward", "torch/nn/modules/linear.py"},
    {"CrossEntropyLoss.forward", "torch/nn/modules/loss.py"},
    {"cross_entropy", "torch/nn/functional.py"},
    {"Module._apply", "torch/nn/modules/module.py"},
    {"SGD.step", "torch/optim/sgd.py"},
    {"_multi_tensor_sgd", "torch/optim/sgd.py"},
    {"GradScaler.unscale_", "torch/amp/grad_scaler.py"},
}};

// A training loop of torchvision's ResNet-50 (AMP, SGD with momentum, batch 32, one device) as
// PyTorch's block events and the roles hooks report it: see the file's comment.
class FrameworkGenerator {
 public:
  explicit FrameworkGenerator(const Options& o)
      : o_(o), rng_(o.seed), file_(o.output, o.chunk_size), allocator_(0x7f0000000000ull) {
    writers_.reserve(3);
    writers_.emplace_back(file_, 0, 4000, "python");
    writers_.emplace_back(file_, 1, 4001, "pt_autograd_0");  // the autograd engine's CUDA thread
    writers_.emplace_back(file_, 2, 4002, "gpumemtrace-smp");
    build_model();
  }

  void run() {
    prologue();
    while (events_ < o_.events) step();
    epilogue();
    for (Writer& w : writers_) w.flush();
  }

  uint64_t file_size() const { return file_.size(); }
  uint64_t events() const { return events_; }
  // The event mix, as JSON members.
  std::string mix() const {
    return "\"block_events\": " + std::to_string(block_events_) +
           ", \"scope_events\": " + std::to_string(scope_events_) +
           ", \"tag_events\": " + std::to_string(tag_events_) +
           ", \"driver_events\": " + std::to_string(driver_events_) +
           ", \"steps\": " + std::to_string(steps_) +
           ", \"stacks\": " + std::to_string(stacks_.size()) +
           ", \"names\": " + std::to_string(names_.size()) +
           ", \"segments_bytes\": " + std::to_string(allocator_.reserved());
  }

 private:
  static constexpr uint64_t kBatch = 32;
  static constexpr uint64_t kSampleEvery = 20'000;
  static constexpr uint32_t kPytorch = static_cast<uint32_t>(gmt::format::BlockAllocator::kPytorch);

  enum class Op : uint8_t { kConv, kBn, kMaxPool, kAvgPool, kFc };
  // A module that does work in forward (its blocks) and backward.
  struct Layer {
    Layer(Op o, uint32_t m, std::string s) : op(o), module(m), site(std::move(s)) {}
    Op op;
    uint32_t module;        // index in modules_
    std::string site;       // its forward's allocation sites (stacks) begin so
    uint64_t in_bytes = 0;  // its input (fp16): what the gradient for it takes
    uint64_t out_bytes = 0;
    uint64_t weight = 0;  // its weight's elements
    uint64_t channels = 0;
    bool grad_input = true;        // its backward makes a gradient for its input
    bool workspace = false;        // cuDNN asks for a workspace
    std::vector<uint32_t> params;  // indices in tensors_: weight, bias
    std::vector<uint64_t> kept;    // the blocks its forward keeps for backward, this step
  };
  // A parameter or buffer of the model.
  struct Tensor {
    std::string name;  // qualified, as named_parameters() and named_buffers() give it
    uint64_t bytes = 0;
    bool buffer = false;
    uint32_t name_id = 0;
    uint64_t address = 0;
    uint64_t grad = 0;   // its .grad's block, 0 when None
    uint64_t state = 0;  // the optimizer's momentum buffer
  };
  // The root forward, in call order: a module's forward entered or left, or a layer's work.
  struct Call {
    enum Kind : uint8_t { kEnter, kExit, kLayer } kind;
    uint32_t index;  // in modules_ (enter), layers_ (layer)
  };
  struct Module {
    std::string name;  // qualified; the root's is its class name
    uint32_t name_id = 0;
  };

  static uint64_t act(uint64_t channels, uint64_t side) {
    return kBatch * channels * side * side * 2;
  }

  uint32_t module(const std::string& name) {
    modules_.push_back(Module{name, 0});
    return static_cast<uint32_t>(modules_.size() - 1);
  }
  uint32_t tensor(const std::string& name, uint64_t bytes, bool buffer) {
    Tensor t;
    t.name = name;
    t.bytes = bytes;
    t.buffer = buffer;
    tensors_.push_back(t);
    return static_cast<uint32_t>(tensors_.size() - 1);
  }
  uint32_t layer(Layer l) {
    layers_.push_back(std::move(l));
    return static_cast<uint32_t>(layers_.size() - 1);
  }
  uint32_t conv(const std::string& name, const std::string& site, uint64_t in, uint64_t out,
                uint64_t k, uint64_t side_in, uint64_t side_out, bool grad_input = true) {
    Layer l(Op::kConv, module(name), site);
    l.in_bytes = act(in, side_in);
    l.out_bytes = act(out, side_out);
    l.weight = out * in * k * k;
    l.channels = out;
    l.grad_input = grad_input;
    l.workspace = k > 1;
    l.params = {tensor(name + ".weight", l.weight * 4, false)};
    return layer(std::move(l));
  }
  uint32_t bn(const std::string& name, const std::string& site, uint64_t c, uint64_t side) {
    Layer l(Op::kBn, module(name), site);
    l.in_bytes = l.out_bytes = act(c, side);
    l.channels = c;
    l.params = {tensor(name + ".weight", c * 4, false), tensor(name + ".bias", c * 4, false)};
    tensor(name + ".running_mean", c * 4, true);
    tensor(name + ".running_var", c * 4, true);
    tensor(name + ".num_batches_tracked", 8, true);
    return layer(std::move(l));
  }
  void call(uint32_t l) {
    calls_.push_back({Call::kEnter, layers_[l].module});
    calls_.push_back({Call::kLayer, l});
    calls_.push_back({Call::kExit, 0});
  }
  void enter_exit(uint32_t m) {
    calls_.push_back({Call::kEnter, m});
    calls_.push_back({Call::kExit, 0});
  }

  // torchvision's resnet50(): modules in named_modules() order, the forward in call order.
  void build_model() {
    module("ResNet");  // the root
    const uint32_t conv1 = conv("conv1", "stem/conv1", 3, 64, 7, 224, 112, false);
    const uint32_t bn1 = bn("bn1", "stem/bn1", 64, 112);
    const uint32_t relu = module("relu");
    Layer pool(Op::kMaxPool, module("maxpool"), "stem/maxpool");
    pool.in_bytes = act(64, 112);
    pool.out_bytes = act(64, 56);
    const uint32_t maxpool = layer(std::move(pool));
    call(conv1);
    call(bn1);
    enter_exit(relu);
    call(maxpool);
    struct Stage {
      int blocks;
      uint64_t width;
      uint64_t stride;
    };
    constexpr std::array<Stage, 4> kStages = {{{3, 64, 1}, {4, 128, 2}, {6, 256, 2}, {3, 512, 2}}};
    uint64_t in = 64, side = 56;
    for (std::size_t s = 0; s < kStages.size(); ++s) {
      const std::string stage = "layer" + std::to_string(s + 1);
      calls_.push_back({Call::kEnter, module(stage)});
      for (int i = 0; i < kStages[s].blocks; ++i) {
        const std::string p = stage + "." + std::to_string(i);
        // A stage's blocks after its first are made by the same lines: the same stacks.
        const std::string site = stage + (i == 0 ? "/first/" : "/rest/");
        const uint64_t w = kStages[s].width, out = 4 * w;
        const uint64_t side_out = i == 0 ? side / kStages[s].stride : side;
        const uint32_t block = module(p);
        const uint32_t c1 = conv(p + ".conv1", site + "conv1", in, w, 1, side, side);
        const uint32_t b1 = bn(p + ".bn1", site + "bn1", w, side);
        const uint32_t c2 = conv(p + ".conv2", site + "conv2", w, w, 3, side, side_out);
        const uint32_t b2 = bn(p + ".bn2", site + "bn2", w, side_out);
        const uint32_t c3 = conv(p + ".conv3", site + "conv3", w, out, 1, side_out, side_out);
        const uint32_t b3 = bn(p + ".bn3", site + "bn3", out, side_out);
        const uint32_t r = module(p + ".relu");
        calls_.push_back({Call::kEnter, block});
        call(c1);
        call(b1);
        enter_exit(r);
        call(c2);
        call(b2);
        enter_exit(r);
        call(c3);
        call(b3);
        if (i == 0) {
          const uint32_t ds = module(p + ".downsample");
          const uint32_t dc =
              conv(p + ".downsample.0", site + "downsample.0", in, out, 1, side, side_out);
          const uint32_t db = bn(p + ".downsample.1", site + "downsample.1", out, side_out);
          calls_.push_back({Call::kEnter, ds});
          call(dc);
          call(db);
          calls_.push_back({Call::kExit, 0});
        }
        enter_exit(r);
        calls_.push_back({Call::kExit, 0});
        in = out;
        side = side_out;
      }
      calls_.push_back({Call::kExit, 0});
    }
    Layer avg(Op::kAvgPool, module("avgpool"), "head/avgpool");
    avg.in_bytes = act(2048, 7);
    avg.out_bytes = kBatch * 2048 * 2;
    const uint32_t avgpool = layer(std::move(avg));
    Layer fc(Op::kFc, module("fc"), "head/fc");
    fc.in_bytes = kBatch * 2048 * 2;
    fc.out_bytes = kBatch * 1000 * 2;
    fc.weight = 1000 * 2048;
    fc.channels = 1000;
    fc.params = {tensor("fc.weight", fc.weight * 4, false), tensor("fc.bias", 1000 * 4, false)};
    const uint32_t head = layer(std::move(fc));
    call(avgpool);
    call(head);
  }

  Writer& main() { return writers_[0]; }
  Writer& autograd() { return writers_[1]; }
  Writer& sampler() { return writers_[2]; }
  // The next record's time, on `w`.
  Writer& stamp(Writer& w) {
    now_ += 200 + rng_.below(1800);
    w.time_ns = now_;
    return w;
  }
  // One event written: the sampler looks at the device every kSampleEvery.
  void event() {
    if (++events_ >= next_sample_) {
      sample(gmt::format::SampleReason::kPeriodic);
      next_sample_ += kSampleEvery;
    }
  }

  // A name's id, its Name record written on `w` the first time, as the hooks' name_id() does.
  uint32_t name(Writer& w, const std::string& text) {
    auto [it, inserted] = names_.try_emplace(text, static_cast<uint32_t>(names_.size() + 1));
    if (inserted) {
      gmt::format::NameRecord n;
      n.time_ns = w.time_ns;
      n.id = it->second;
      n.text = text;
      w.record(n);
    }
    return it->second;
  }

  // The stack of an allocation site, defined (with its Python code objects) by the thread that
  // first uses it: the main thread's stacks have Python frames, the autograd thread's none.
  uint32_t stack(Writer& w, const std::string& site) {
    auto [it, inserted] = stacks_.try_emplace(site, static_cast<uint32_t>(stacks_.size() + 1));
    if (!inserted) return it->second;
    const uint32_t id = it->second;
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a: the same on every platform
    for (const char c : site) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
    Rng frames(o_.seed * 7919 + h);
    gmt::format::StackRecord s;
    s.time_ns = w.time_ns;
    s.id = id;
    const bool driver = site.ends_with("#cudaMalloc");
    const std::size_t depth = 16 + frames.below(24);
    for (std::size_t f = 0; f < depth; ++f) {
      // cudaMalloc's stacks begin in the driver and the runtime, the allocator's callbacks in
      // libc10_cuda; then PyTorch, and the interpreter at the bottom of the main thread's.
      uint64_t m = 3 + frames.below(3);
      if (driver && f < 2) m = 1 + f;
      if (!driver && f == 0) m = 3;
      if (&w == &main() && f + 2 >= depth) m = 0;
      s.frames.push_back(0x7e0000000000ull + (m << 32) + 0x1000 + frames.below(48u << 20));
    }
    if (&w == &main()) {
      // Outermost first: the script, then module calls through the hooks' wrapper, as many
      // levels as the site is deep; reversed below (innermost first).
      std::vector<uint64_t> python = {frame(frames, 0), frame(frames, 1), frame(frames, 2)};
      const std::size_t levels =
          1 + static_cast<std::size_t>(std::count(site.begin(), site.end(), '/'));
      for (std::size_t l = 0; l < levels; ++l) {
        python.push_back(frame(frames, 3));
        python.push_back(frame(frames, 4));
        python.push_back(frame(frames, 5 + frames.below(kPythonCodes.size() - 5)));
      }
      s.python.assign(python.rbegin(), python.rend());
    }
    w.record(s);
    return id;
  }
  // A Python frame of code `code` (its record written first if new) at some line.
  uint64_t frame(Rng& r, std::size_t code) {
    if (!python_defined_[code]) {
      python_defined_[code] = true;
      gmt::format::PythonCodeRecord c;
      c.time_ns = main().time_ns;
      c.id = static_cast<uint32_t>(code + 1);
      c.name = std::string(kPythonCodes[code].name);
      c.file = kPythonCodes[code].file.starts_with("train.py")
                   ? "/home/user/train.py"
                   : std::string(kPythonCodes[code].file.starts_with("<") ? "" : kSitePackages) +
                         std::string(kPythonCodes[code].file);
      main().record(c);
    }
    return (static_cast<uint64_t>(code + 1) << 32) | (20 + r.below(600));
  }

  // A block handed out by the allocator on thread `w`, from site `site`: the segment's
  // cudaMalloc and kSegmentAlloc first when it took one.
  uint64_t alloc(Writer& w, uint64_t bytes, const std::string& site) {
    const TorchAllocator::Taken t = allocator_.allocate(bytes);
    stamp(w);
    if (t.segment != 0) {
      gmt::format::AllocRecord a;
      a.time_ns = w.time_ns;
      a.device = 0;
      a.kind = MemoryKind::kDevice;
      a.api = Api::kCuMemAlloc;
      a.public_api = Api::kCudaMalloc;
      a.address = t.segment;
      a.size = t.segment_size;
      a.context = 1;
      a.stack = stack(w, site + "#cudaMalloc");
      w.record(a);
      ++driver_events_;
      event();
      if (!tracker_attached_) attach_tracker(w);
      stamp(w);
      block(w, BlockAction::kSegmentAlloc, t.segment, t.segment_size, stack(w, site + "#segment"));
      stamp(w);
    }
    block(w, BlockAction::kAlloc, t.address, bytes, stack(w, site));
    return t.address;
  }
  // A block freed: the request and its completion, at once (as PyTorch completes nearly every
  // free: no stream uses it).
  void release(Writer& w, uint64_t address) {
    const uint64_t size = allocator_.free(address);
    stamp(w);
    block(w, BlockAction::kFreeRequested, address, size, 0);
    block(w, BlockAction::kFreeCompleted, address, size, 0);
  }
  void release_all(Writer& w, std::vector<uint64_t>& blocks) {
    for (uint64_t b : blocks) release(w, b);
    blocks.clear();
  }
  void block(Writer& w, BlockAction action, uint64_t address, uint64_t size, uint32_t stack_id) {
    gmt::format::BlockRecord b;
    b.time_ns = w.time_ns;
    b.allocator = kPytorch;
    b.action = static_cast<uint32_t>(action);
    b.device = 0;
    b.address = address;
    b.size = size;
    b.stack = stack_id;
    w.block(b);
    ++block_events_;
    event();
  }
  void scope(ScopeAction action, ScopeKind kind, uint32_t name_id) {
    Writer& w = stamp(main());
    gmt::format::ScopeRecord s;
    s.time_ns = w.time_ns;
    s.action = static_cast<uint32_t>(action);
    s.kind = static_cast<uint32_t>(kind);
    s.name = name_id;
    w.record(s);
    ++scope_events_;
    event();
  }
  void tag(TagRole role, uint64_t address, uint32_t name_id) {
    Writer& w = stamp(main());
    gmt::format::TagRecord t;
    t.time_ns = w.time_ns;
    t.role = static_cast<uint32_t>(role);
    t.address = address;
    t.name = name_id;
    w.record(t);
    ++tag_events_;
    event();
  }

  // PyTorch's tracker attaching, before the allocator's first block event: its settings (the
  // defaults) and the note.
  void attach_tracker(Writer& w) {
    tracker_attached_ = true;
    gmt::format::AllocatorSettingsRecord settings;
    settings.time_ns = w.time_ns;
    settings.allocator = kPytorch;
    settings.max_split_size = UINT64_MAX;
    settings.roundup_divisions.assign(gmt::format::AllocatorSettingsRecord::kIntervals, 0);
    w.record(settings);
    note(w, "pytorch block events on (torch 2.9.1+cu130)");
  }
  void note(Writer& w, const std::string& text) {
    gmt::format::NoteRecord n;
    n.time_ns = w.time_ns;
    n.text = text;
    w.record(n);
  }

  void sample(gmt::format::SampleReason reason) {
    Writer& w = sampler();
    w.time_ns = now_;
    gmt::format::SampleRecord s;
    s.time_ns = now_;
    s.device = 0;
    s.reason = static_cast<uint32_t>(reason);
    s.present = gmt::format::kNvmlDeviceUsed | gmt::format::kNvmlDeviceTotal |
                gmt::format::kDriverFree | gmt::format::kDriverTotal;
    s.read_ns = 20'000;
    s.nvml_device_total = s.driver_total = 143'771'000'832ull;
    s.nvml_device_used = allocator_.reserved() + (600ull << 20);  // and the context's own
    s.driver_free = s.driver_total - s.nvml_device_used;
    w.record(s);
  }

  void prologue() {
    Writer& m = stamp(main());
    gmt::format::ProcessInfoRecord info;
    info.pid = 4242;
    info.ppid = 4200;
    info.wall_start_ns = 1'700'000'000'000'000'000ull;
    info.mono_start_ns = 1'000'000'000;
    info.host = "bench-host";
    info.argv = {"python", "train.py", "--model", "resnet50", "--amp", "--batch-size", "32"};
    info.env = {"RANK=0", "LOCAL_RANK=0", "WORLD_SIZE=1"};
    m.process_info(info);
    write_modules(m, now_);
    gmt::format::ContextRecord context;
    context.time_ns = now_;
    context.id = 1;
    context.handle = 0x5500000000ull;
    context.device = 0;
    m.record(context);
    gmt::format::DeviceRecord device;
    device.time_ns = now_;
    device.device = 0;
    device.pci_bus_id = "0000:10:00.0";
    device.nvml_index = 0;
    device.name = "NVIDIA H200";
    device.total_bytes = 143'771'000'832ull;
    sampler().time_ns = now_;
    sampler().record(device);
    sample(gmt::format::SampleReason::kFirst);
    // model.cuda(): every module's parameters, then its buffers.
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
      Tensor& t = tensors_[i];
      t.address = alloc(main(), t.bytes, t.buffer ? "init/buffer" : "init/parameter");
      if (i == 0) {
        // The hooks install themselves once the tracker attached (a pending call).
        note(main(), "pytorch roles and modules on (torch 2.9.1+cu130)");
        backward_name_ = name(main(), "backward");
      }
    }
    scaler_scale_ = alloc(main(), 4, "scaler/scale");
    scaler_growth_ = alloc(main(), 4, "scaler/growth_tracker");
  }

  // A root module's forward (python/gpumemtrace_roles.py's root_call): reported whole in its
  // first three and one in sixteen after, the others in outline.
  bool root_whole(uint32_t& forwards) {
    const uint32_t n = forwards++;
    return n < 3 || n % 16 == 0;
  }

  void step() {
    Writer& m = main();
    // The loader's next batch: the last one's tensors go as the names are rebound.
    if (images_ != 0) release(m, images_);
    if (labels_ != 0) release(m, labels_);
    images_ = alloc(m, kBatch * 3 * 224 * 224 * 4, "input/images");
    labels_ = alloc(m, kBatch * 8, "input/labels");
    forward();
    loss_forward();
    const uint64_t scaled = alloc(m, 4, "scaler/scale_loss");
    // optimizer.zero_grad(): set to None.
    for (Tensor& t : tensors_) {
      if (t.grad != 0) release(m, t.grad);
      t.grad = 0;
    }
    backward();
    optimizer_step();
    release(m, scaled);
    release(m, logits_);
    release(m, loss_);
    ++steps_;
  }

  void forward() {
    Writer& m = main();
    Module& root = modules_[0];
    if (root.name_id == 0) {
      // adopt(): the modules' names, then _Root's: the parameters', then the buffers'.
      stamp(m);
      for (Module& mod : modules_) mod.name_id = name(m, mod.name);
      for (bool buffers : {false, true}) {
        for (Tensor& t : tensors_) {
          if (t.buffer == buffers) t.name_id = name(m, t.name);
        }
      }
    }
    const bool whole = root_whole(model_forwards_);
    if (!tagged_) {
      // The root's tensors, tagged when they moved: once, here.
      tagged_ = true;
      for (bool buffers : {false, true}) {
        for (const Tensor& t : tensors_) {
          if (t.buffer == buffers)
            tag(buffers ? TagRole::kBuffer : TagRole::kParameter, t.address, t.name_id);
        }
      }
    }
    scope(whole ? ScopeAction::kEnter : ScopeAction::kEnterOutline, ScopeKind::kModule,
          root.name_id);
    for (const Call& c : calls_) {
      switch (c.kind) {
        case Call::kEnter:
          if (whole) scope(ScopeAction::kEnter, ScopeKind::kModule, modules_[c.index].name_id);
          break;
        case Call::kExit:
          if (whole) scope(ScopeAction::kExit, ScopeKind::kModule, 0);
          break;
        case Call::kLayer:
          layer_forward(layers_[c.index]);
          break;
      }
    }
    scope(ScopeAction::kExit, ScopeKind::kModule, 0);
  }

  // A layer's work in forward, under autocast: its weights cast to half (kept for backward by
  // autograd), its output (kept), cuDNN's workspace (freed at once).
  void layer_forward(Layer& l) {
    Writer& m = main();
    const std::string& s = l.site;
    switch (l.op) {
      case Op::kConv: {
        l.kept.push_back(alloc(m, l.weight * 2, s + "/cast_weight"));
        if (!l.grad_input) l.kept.push_back(alloc(m, l.in_bytes, s + "/cast_input"));
        const uint64_t workspace = l.workspace ? alloc(m, l.out_bytes / 2, s + "/workspace") : 0;
        l.kept.push_back(alloc(m, l.out_bytes, s + "/output"));
        if (workspace != 0) release(m, workspace);
        break;
      }
      case Op::kBn:
        l.kept.push_back(alloc(m, l.out_bytes, s + "/output"));
        l.kept.push_back(alloc(m, l.channels * 4, s + "/save_mean"));
        l.kept.push_back(alloc(m, l.channels * 4, s + "/save_invstd"));
        break;
      case Op::kMaxPool:
        l.kept.push_back(alloc(m, l.out_bytes, s + "/output"));
        l.kept.push_back(alloc(m, l.out_bytes * 4, s + "/indices"));
        break;
      case Op::kAvgPool:
        l.kept.push_back(alloc(m, l.out_bytes, s + "/output"));
        break;
      case Op::kFc:
        l.kept.push_back(alloc(m, l.weight * 2, s + "/cast_weight"));
        l.kept.push_back(alloc(m, l.channels * 2, s + "/cast_bias"));
        logits_ = alloc(m, l.out_bytes, s + "/output");  // the program's `output`
        break;
    }
  }

  // criterion(output, target): a root of its own, in fp32 under autocast.
  void loss_forward() {
    Writer& m = main();
    const uint32_t id = name(m, "CrossEntropyLoss");
    const bool whole = root_whole(loss_forwards_);
    scope(whole ? ScopeAction::kEnter : ScopeAction::kEnterOutline, ScopeKind::kModule, id);
    const uint64_t cast = alloc(m, kBatch * 1000 * 4, "loss/cast");
    loss_kept_.push_back(alloc(m, kBatch * 1000 * 4, "loss/log_softmax"));
    release(m, cast);
    loss_ = alloc(m, 4, "loss/nll_loss");
    loss_kept_.push_back(alloc(m, 4, "loss/total_weight"));
    scope(ScopeAction::kExit, ScopeKind::kModule, 0);
  }

  // scaler.scale(loss).backward(): the engine's thread makes the gradients and frees what
  // forward kept; the hooks tag the gradients once it returns.
  void backward() {
    scope(ScopeAction::kEnter, ScopeKind::kBackward, backward_name_);
    Writer& a = autograd();
    const uint64_t g = alloc(a, 4, "bw/mul");
    const uint64_t g_nll = alloc(a, kBatch * 1000 * 4, "bw/nll_loss");
    release(a, g);
    const uint64_t g_lsm = alloc(a, kBatch * 1000 * 4, "bw/log_softmax");
    release(a, g_nll);
    release_all(a, loss_kept_);
    uint64_t grad = alloc(a, kBatch * 1000 * 2, "bw/to_copy");
    release(a, g_lsm);
    for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) grad = layer_backward(*it, grad);
    if (grad != 0) release(a, grad);
    for (const Tensor& t : tensors_) {
      if (!t.buffer) tag(TagRole::kGradient, t.grad, t.name_id);
    }
    scope(ScopeAction::kExit, ScopeKind::kBackward, 0);
  }

  // A parameter's gradient: in fp32 (the cast's backward), kept by AccumulateGrad as its .grad.
  void gradient(uint32_t param, const std::string& site) {
    tensors_[param].grad = alloc(autograd(), tensors_[param].bytes, site);
  }

  // A layer's backward on the autograd thread: the gradient for its input, its parameters'
  // gradients (through half-precision temporaries), what forward kept freed. Returns the
  // gradient for the layer before it, 0 when none.
  uint64_t layer_backward(Layer& l, uint64_t grad_out) {
    Writer& a = autograd();
    uint64_t grad_in = 0;
    switch (l.op) {
      case Op::kConv: {
        const uint64_t workspace = l.workspace ? alloc(a, l.out_bytes / 2, "bw/conv/workspace") : 0;
        if (l.grad_input) grad_in = alloc(a, l.in_bytes, "bw/conv/grad_input");
        const uint64_t half = alloc(a, l.weight * 2, "bw/conv/grad_weight");
        gradient(l.params[0], "bw/to_copy/weight");
        release(a, half);
        if (workspace != 0) release(a, workspace);
        break;
      }
      case Op::kBn:
        grad_in = alloc(a, l.in_bytes, "bw/batch_norm/grad_input");
        gradient(l.params[0], "bw/batch_norm/grad_weight");
        gradient(l.params[1], "bw/batch_norm/grad_bias");
        break;
      case Op::kMaxPool:
        grad_in = alloc(a, l.in_bytes, "bw/max_pool/grad_input");
        break;
      case Op::kAvgPool:
        grad_in = alloc(a, l.in_bytes, "bw/avg_pool/grad_input");
        break;
      case Op::kFc: {
        grad_in = alloc(a, l.in_bytes, "bw/addmm/grad_input");
        const uint64_t half_w = alloc(a, l.weight * 2, "bw/addmm/grad_weight");
        gradient(l.params[0], "bw/to_copy/weight");
        release(a, half_w);
        const uint64_t half_b = alloc(a, l.channels * 2, "bw/sum/grad_bias");
        gradient(l.params[1], "bw/to_copy/bias");
        release(a, half_b);
        break;
      }
    }
    release_all(a, l.kept);
    release(a, grad_out);
    return grad_in;
  }

  // scaler.step(optimizer): unscale_ (its temporaries), then SGD's foreach step (weight decay
  // into new tensors; the momentum buffers made by the first step, the state tagged after it),
  // then scaler.update().
  void optimizer_step() {
    Writer& m = main();
    const uint64_t inv_scale = alloc(m, 4, "scaler/inv_scale");
    const uint64_t found_inf = alloc(m, 4, "scaler/found_inf");
    stamp(m);
    scope(ScopeAction::kEnter, ScopeKind::kOptimizer, name(m, "SGD"));
    std::vector<uint64_t> decayed;
    for (const Tensor& t : tensors_) {
      if (!t.buffer) decayed.push_back(alloc(m, t.bytes, "sgd/foreach_add"));
    }
    const bool first = tensors_[0].state == 0;
    if (first) {
      for (Tensor& t : tensors_) {
        if (!t.buffer) t.state = alloc(m, t.bytes, "sgd/clone");
      }
    }
    release_all(m, decayed);
    if (first) {
      // step_post: the state's addresses changed; their names interned as they are tagged.
      stamp(m);
      std::vector<uint32_t> ids;
      for (const Tensor& t : tensors_) {
        if (!t.buffer) ids.push_back(name(m, t.name + ".momentum_buffer"));
      }
      std::size_t i = 0;
      for (const Tensor& t : tensors_) {
        if (!t.buffer) tag(TagRole::kOptimizerState, t.state, ids[i++]);
      }
    }
    scope(ScopeAction::kExit, ScopeKind::kOptimizer, 0);
    release(m, found_inf);
    release(m, inv_scale);
  }

  // The program's end (atexit), then the interpreter's teardown frees its tensors, then the
  // library's End; the segments stay with the process.
  void epilogue() {
    Writer& m = stamp(main());
    scope(ScopeAction::kEnter, ScopeKind::kProgramEnd, name(m, "program end"));
    release(m, images_);
    release(m, labels_);
    for (Tensor& t : tensors_) {
      for (uint64_t* b : {&t.grad, &t.state, &t.address}) {
        if (*b != 0) release(m, *b);
        *b = 0;
      }
    }
    release(m, scaler_scale_);
    release(m, scaler_growth_);
    stamp(m);
    sample(gmt::format::SampleReason::kLast);
    gmt::format::EndRecord end;
    end.time_ns = now_;
    m.record(end);
  }

  const Options o_;
  Rng rng_;
  TraceFile file_;
  std::vector<Writer> writers_;
  TorchAllocator allocator_;
  std::vector<Module> modules_;
  std::vector<Tensor> tensors_;
  std::vector<Layer> layers_;
  std::vector<Call> calls_;
  std::unordered_map<std::string, uint32_t> names_;
  std::unordered_map<std::string, uint32_t> stacks_;
  std::array<bool, kPythonCodes.size()> python_defined_{};
  bool tracker_attached_ = false;
  bool tagged_ = false;
  uint32_t backward_name_ = 0;
  uint32_t model_forwards_ = 0;
  uint32_t loss_forwards_ = 0;
  uint64_t images_ = 0;
  uint64_t labels_ = 0;
  uint64_t logits_ = 0;
  uint64_t loss_ = 0;
  std::vector<uint64_t> loss_kept_;
  uint64_t scaler_scale_ = 0;
  uint64_t scaler_growth_ = 0;
  uint64_t now_ = 1000;
  uint64_t events_ = 0;
  uint64_t next_sample_ = kSampleEvery;
  uint64_t block_events_ = 0;
  uint64_t scope_events_ = 0;
  uint64_t tag_events_ = 0;
  uint64_t driver_events_ = 0;
  uint64_t steps_ = 0;
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
    if (flag == "--framework-blocks") {
      o.framework_blocks = true;
      continue;
    }
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
    if (options.framework_blocks) {
      FrameworkGenerator generator(options);
      generator.run();
      std::printf("{\"path\": \"%s\", \"events\": %llu, \"file_bytes\": %llu, %s}\n",
                  options.output.c_str(), static_cast<unsigned long long>(generator.events()),
                  static_cast<unsigned long long>(generator.file_size()), generator.mix().c_str());
      return 0;
    }
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
                 "[--fail-one-in N] [--framework-blocks]\n");
    return 2;
  }
}
