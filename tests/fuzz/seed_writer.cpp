// SPDX-License-Identifier: Apache-2.0
// seed_writer: writes the fuzzer's seeds that synthetic_trace cannot: a small trace with a
// record of every type, in a sealed chunk (its count word written, as when a thread leaves a
// chunk) and an open one (no count, as a thread still running at a kill leaves it), and the
// ways a recording ends early: stopped (a stop note and the header's reason), ended by exec,
// and a file that holds only a header with its reason; and a bounded trace (4.5) whose oldest
// chunks were reused, rebuilt from a checkpoint. make_corpus.py runs it.
//
//   seed_writer OUTPUT_DIR
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "format/chunk.h"
#include "format/file_header.h"
#include "format/record_encoder.h"
#include "format/recording_end.h"
#include "format/records.h"

namespace {

using namespace gmt::format;

constexpr uint32_t kChunk = 4096;

// One writer's chunk: records appended, then its header.
class ChunkBuilder {
 public:
  ChunkBuilder(uint32_t writer, uint32_t tid, uint32_t sequence = 0)
      : writer_(writer), tid_(tid), sequence_(sequence) {}

  template <class R>
  void add(R rec) {
    if constexpr (requires { rec.time_ns; }) rec.time_ns = time_ += 1000;
    encode_record(rec, codec_, payload_);
    ++records_;
  }
  // A BlockFreedAtOnce record (4.7): the completion of the free request added just before.
  void add_freed_at_once() {
    const uint8_t frame[2] = {static_cast<uint8_t>(RecordType::kBlockFreedAtOnce), 0};
    payload_.append(frame, sizeof frame);
    ++records_;
  }

  // The chunk's bytes; `sealed`: with its count word.
  std::vector<uint8_t> bytes(bool sealed) const {
    std::vector<uint8_t> out(kChunk, 0);
    const uint32_t used = static_cast<uint32_t>(payload_.size());
    std::memcpy(out.data() + kChunkHeaderSize, payload_.data(), used);
    using L = ChunkHeaderLayout;
    const uint32_t magic = kChunkMagic;
    std::memcpy(out.data() + L::kMagic, &magic, 4);
    std::memcpy(out.data() + L::kWriter, &writer_, 4);
    std::memcpy(out.data() + L::kSequence, &sequence_, 4);
    std::memcpy(out.data() + L::kThread, &tid_, 4);
    const uint64_t published =
        published_word(used, extend_crc32c(0, out.data() + kChunkHeaderSize, used));
    std::memcpy(out.data() + L::kPublished, &published, 8);
    if (sealed) {
      const uint64_t counted = counted_word(used, records_);
      std::memcpy(out.data() + L::kCounted, &counted, 8);
    }
    return out;
  }

 private:
  uint32_t writer_;
  uint32_t tid_;
  uint32_t sequence_;
  uint64_t time_ = 0;
  uint32_t records_ = 0;
  CodecState codec_;
  GrowableBuffer payload_;
};

std::vector<uint8_t> header(const std::string& stop_reason = "") {
  std::vector<uint8_t> out(kFirstChunkOffset, 0);
  write_header(out.data(), kChunk);
  if (!stop_reason.empty()) {
    const std::string bytes = stop_reason_bytes(stop_reason);
    std::memcpy(out.data() + kStopReasonOffset, bytes.data(), bytes.size());
  }
  return out;
}

void save(const std::string& path, const std::vector<std::vector<uint8_t>>& parts) {
  std::ofstream out(path, std::ios::binary);
  for (const auto& part : parts)
    out.write(reinterpret_cast<const char*>(part.data()),
              static_cast<std::streamsize>(part.size()));
}

ChunkBuilder first_thread() {
  ChunkBuilder a(0, 100);
  ProcessInfoRecord info;
  info.pid = 100;
  info.ppid = 1;
  info.host = "seed";
  info.argv = {"seed", "--every-record"};
  info.env = {"RANK=0"};
  a.add(info);
  a.add(ThreadRecord{.time_ns = 0, .tid = 100, .name = "main"});
  return a;
}

// Every record type, in the order the recorder writes them.
void every_record(const std::string& dir) {
  ChunkBuilder a = first_thread();
  a.add(ContextRecord{.time_ns = 0, .id = 1, .handle = 0xc0, .device = 0});
  DeviceRecord dev;
  dev.device = 0;
  dev.pci_bus_id = "0000:10:00.0";
  dev.name = "Seed GPU";
  dev.total_bytes = 16ull << 30;
  a.add(dev);
  a.add(NameRecord{.time_ns = 0, .id = 1, .text = "step"});
  a.add(PythonCodeRecord{.time_ns = 0, .id = 1, .name = "train", .file = "train.py"});
  a.add(ModuleRecord{.time_ns = 0,
                     .path = "/usr/lib/libseed.so",
                     .load_base = 0x400000,
                     .start = 0x400000,
                     .end = 0x500000,
                     .build_id = "abcd"});
  a.add(StackRecord{
      .time_ns = 0, .id = 1, .frames = {0x401000, 0x402000}, .python = {1ull << 32 | 7}});
  PhaseRecord push;
  push.action = 0;
  push.name = 1;
  a.add(push);
  AllocRecord alloc;
  alloc.device = 0;
  alloc.kind = MemoryKind::kDevice;
  alloc.api = Api::kCuMemAlloc;
  alloc.address = 0x7f0000000000;
  alloc.size = 1 << 20;
  alloc.context = 1;
  alloc.stack = 1;
  a.add(alloc);
  AllocRecord physical = alloc;
  physical.kind = MemoryKind::kVmmPhysical;
  physical.api = Api::kCuMemCreate;
  physical.address = 0x55;
  physical.size = 2 << 20;
  a.add(physical);
  a.add(MapRecord{.time_ns = 0,
                  .device = 0,
                  .address = 0x7e0000000000,
                  .size = 2 << 20,
                  .offset = 0,
                  .handle = 0x55});
  a.add(RetainHandleRecord{.time_ns = 0, .handle = 0x55});
  PoolRecord pool;
  pool.device = 0;
  pool.api = Api::kCuMemPoolCreate;
  pool.pool = 0x99;
  a.add(pool);
  AllocatorSettingsRecord settings;
  settings.allocator = 1;
  settings.max_split_size = 64 << 20;
  settings.roundup_divisions.assign(AllocatorSettingsRecord::kIntervals, 4);
  a.add(settings);
  BlockRecord block;
  block.allocator = 1;
  block.action = 0;
  block.device = 0;
  block.address = 0x7f0000000000;
  block.size = 4096;
  block.stack = 1;
  a.add(block);
  block.action = static_cast<uint32_t>(BlockAction::kFreeRequested);
  block.stack = 0;
  a.add(block);
  a.add(ScopeRecord{.time_ns = 0,
                    .thread = 0,
                    .action = static_cast<uint32_t>(ScopeAction::kEnter),
                    .kind = static_cast<uint32_t>(ScopeKind::kModule),
                    .name = 1});
  a.add(TagRecord{.time_ns = 0,
                  .thread = 0,
                  .role = static_cast<uint32_t>(TagRole::kParameter),
                  .address = 0x7f0000000000,
                  .name = 1});
  a.add(ScopeRecord{.time_ns = 0,
                    .thread = 0,
                    .action = static_cast<uint32_t>(ScopeAction::kExit),
                    .kind = static_cast<uint32_t>(ScopeKind::kModule),
                    .name = 0});
  a.add_freed_at_once();
  SampleRecord sample;
  sample.device = 0;
  sample.reason = static_cast<uint32_t>(SampleReason::kHighWater);
  sample.present = SampleField::kDriverFree | SampleField::kDriverTotal;
  sample.driver_free = 8ull << 30;
  sample.driver_total = 16ull << 30;
  a.add(sample);
  a.add(NoteRecord{.time_ns = 0, .text = "nvml view missing: seed"});
  AllocFailedRecord failed;
  failed.device = 0;
  failed.kind = MemoryKind::kDevice;
  failed.api = Api::kCuMemAlloc;
  failed.size = 1ull << 40;
  failed.error = 2;
  failed.stack = 1;
  a.add(failed);
  a.add(UnmapRecord{.time_ns = 0, .address = 0x7e0000000000, .size = 2 << 20});
  FreeRecord free;
  free.api = Api::kCuMemFree;
  free.address = 0x7f0000000000;
  a.add(free);
  PhaseRecord pop;
  pop.action = 1;
  a.add(pop);
  ContextDestroyedRecord destroyed;
  destroyed.id = 1;
  destroyed.api = Api::kCuCtxDestroy;
  a.add(destroyed);
  a.add(EndRecord{});

  // A second thread, still running when the process ended: its chunk has no count.
  ChunkBuilder b(1, 101);
  b.add(ThreadRecord{.time_ns = 0, .tid = 101, .name = "worker"});
  AllocRecord other = alloc;
  other.address = 0x7f0000100000;
  b.add(other);
  b.add(NoteRecord{.time_ns = 0,
                   .text = std::string(kDroppedNote) + "3 made by signal handlers (seed)"});
  save(dir + "/every-record-type.gmt", {header(), a.bytes(true), b.bytes(false)});
}

// A recording that stopped (disk full), one that ended by exec, one with nothing but a header.
void early_ends(const std::string& dir) {
  const std::string why = "the disk is full (No space left on device) at byte 8192";
  {
    ChunkBuilder a = first_thread();
    AllocRecord alloc;
    alloc.device = 0;
    alloc.address = 0x1000;
    alloc.size = 4096;
    a.add(alloc);
    a.add(NoteRecord{.time_ns = 0, .text = std::string(kStoppedNote) + why});
    save(dir + "/stopped.gmt", {header(why), a.bytes(true)});
  }
  {
    ChunkBuilder a = first_thread();
    AllocRecord alloc;
    alloc.device = 0;
    alloc.address = 0x1000;
    alloc.size = 4096;
    a.add(alloc);
    a.add(NoteRecord{.time_ns = 0, .text = std::string(kExecNote) + "/bin/true"});
    a.add(NoteRecord{.time_ns = 0, .text = std::string(kExecFailedNote) + "ENOENT"});
    a.add(NoteRecord{.time_ns = 0, .text = std::string(kExecNote) + "/bin/sh"});
    save(dir + "/exec.gmt", {header(), a.bytes(false)});
  }
  save(dir + "/header-only-stopped.gmt",
       {header("the disk is full (No space left on device) at byte 4096")});
}

}  // namespace

// A bounded trace (4.7) whose oldest chunks were reused: definitions and checkpoints in the
// writer's own chunks (thread 0), checkpoint 1 whole, checkpoint 2 whole (allocations and a
// caching allocator's segment and block) and the one to start from (the header's valid_from), and a
// thread's chunk whose first three were reused, with records before and after checkpoint 2.
void bounded(const std::string& dir) {
  std::vector<uint8_t> head(kFirstChunkOffset, 0);
  write_header(head.data(), kChunk, 1 << 20);
  const uint64_t valid_from = 2;
  const uint64_t dropped = 40;
  std::memcpy(head.data() + BoundedHeaderLayout::kValidFrom, &valid_from, 8);
  std::memcpy(head.data() + BoundedHeaderLayout::kDroppedRecords, &dropped, 8);

  ChunkBuilder definitions(0, 0);
  ProcessInfoRecord info;
  info.pid = 300;
  info.argv = {"seed", "--bounded"};
  definitions.add(info);
  definitions.add(StackRecord{.time_ns = 0, .id = 1, .frames = {0x401000}, .python = {}});
  definitions.add(NameRecord{.time_ns = 0, .id = 1, .text = "training"});

  ChunkBuilder checkpoints(1, 0);  // times 1000, 2000, ...: checkpoint 2 begins at 4000
  CarriedRecord carried;
  carried.device = 0;
  carried.api = Api::kCuMemAlloc;
  carried.address = 0x7f0000000000;
  carried.size = 1 << 20;
  carried.stack = 1;
  checkpoints.add(CheckpointRecord{.time_ns = 0, .id = 1, .action = 0, .items = 0});
  checkpoints.add(CarriedRecord{carried});
  checkpoints.add(CheckpointRecord{.time_ns = 0, .id = 1, .action = 1, .items = 1});
  checkpoints.add(CheckpointRecord{.time_ns = 0, .id = 2, .action = 0, .items = 0});
  carried.checkpoint = 2;
  checkpoints.add(CarriedRecord{carried});
  carried.address = 0x7f0000200000;
  checkpoints.add(CarriedRecord{carried});
  // A caching allocator's segment (the allocation above) and a block in it whose free was
  // requested: its kAlloc, then its kFreeRequested.
  CarriedBlockRecord block;
  block.checkpoint = 2;
  block.allocator = 1;
  block.action = static_cast<uint32_t>(BlockAction::kSegmentAlloc);
  block.device = 0;
  block.address = 0x7f0000200000;
  block.size = 1 << 20;
  block.stack = 1;
  checkpoints.add(CarriedBlockRecord{block});
  block.action = static_cast<uint32_t>(BlockAction::kAlloc);
  block.size = 4096;
  checkpoints.add(CarriedBlockRecord{block});
  block.action = static_cast<uint32_t>(BlockAction::kFreeRequested);
  block.stack = 0;
  checkpoints.add(CarriedBlockRecord{block});
  // A VMM handle released while mapped, with one more reference (4.4): its allocation, then its
  // mapping, the extra reference and the release.
  carried.kind = MemoryKind::kVmmPhysical;
  carried.api = Api::kCuMemCreate;
  carried.address = 0x99;
  carried.size = 2 << 20;
  checkpoints.add(CarriedRecord{carried});
  CarriedVmmRecord vmm;
  vmm.checkpoint = 2;
  vmm.handle = 0x99;
  vmm.action = static_cast<uint32_t>(CarriedVmmAction::kMap);
  vmm.device = 0;
  vmm.address = 0x7f1000000000;
  vmm.size = 2 << 20;
  checkpoints.add(CarriedVmmRecord{vmm});
  vmm = CarriedVmmRecord{.checkpoint = 2, .handle = 0x99};
  vmm.action = static_cast<uint32_t>(CarriedVmmAction::kRetain);
  checkpoints.add(CarriedVmmRecord{vmm});
  vmm.action = static_cast<uint32_t>(CarriedVmmAction::kRelease);
  checkpoints.add(CarriedVmmRecord{vmm});
  // A phase pushed before the window and still open (4.5).
  CarriedPhaseRecord phase;
  phase.checkpoint = 2;
  phase.phase_time_ns = 500;
  phase.tid = 100;
  phase.action = static_cast<uint32_t>(PhaseAction::kPush);
  phase.name = 1;
  checkpoints.add(CarriedPhaseRecord{phase});
  checkpoints.add(CheckpointRecord{.time_ns = 0, .id = 2, .action = 1, .items = 10});

  ChunkBuilder thread(2, 100, 3);
  AllocRecord alloc;
  alloc.device = 0;
  alloc.api = Api::kCuMemAlloc;
  alloc.address = 0x7f0000200000;
  alloc.size = 1 << 20;
  alloc.stack = 1;
  thread.add(alloc);  // at 1000: before checkpoint 2, which carries it
  for (int i = 0; i < 4; ++i) {
    alloc.address = 0x7f0000400000;
    thread.add(alloc);
    thread.add(FreeRecord{.time_ns = 0,
                          .thread = 0,
                          .api = Api::kCuMemFree,
                          .public_api = Api::kUnknown,
                          .address = 0x7f0000400000});
  }
  thread.add(FreeRecord{.time_ns = 0,
                        .thread = 0,
                        .api = Api::kCuMemFree,
                        .public_api = Api::kUnknown,
                        .address = 0x7f0000000000});
  save(dir + "/bounded.gmt",
       {head, definitions.bytes(true), checkpoints.bytes(true), thread.bytes(false)});
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: seed_writer OUTPUT_DIR\n");
    return 2;
  }
  every_record(argv[1]);
  early_ends(argv[1]);
  bounded(argv[1]);
  return 0;
}
