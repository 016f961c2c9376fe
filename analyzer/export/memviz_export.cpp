// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace export --format memviz`: a pickle in the shape of PyTorch's memory snapshot
// (torch.cuda.memory._snapshot()), which pytorch.org/memory_viz, MemoryViz.js and
// `python -m torch.cuda._memory_viz` load:
//   {"segments": [...], "device_traces": [[entry, ...] per device ordinal]}
// A caching allocator that reported its blocks (PyTorch's, CuPy's, format 4.2) is shown as its own
// snapshot shows it: its segments hold its blocks (PyTorch's extents rebuilt from the sizes asked
// for, block_extents.h) with the free space between them as inactive blocks, and the device's
// trace has its block events ("alloc", "free_requested", "free_completed", "segment_alloc",
// "segment_free", "segment_map", "segment_unmap"). Any other driver allocation is one segment
// holding one block of its size: "segment_alloc" then "alloc", at its free "free_completed" then
// "segment_free". An "oom" per failed allocation. The segments are what was live at the end of
// the trace. Kinds with a device address are shown (device, pitched, stream-ordered, graph
// memory); VMM, arrays and managed memory are not (an expandable segment's blocks are in the
// device's trace, not among the segments). Each device keeps its last kEntriesKept entries, as
// PyTorch's history keeps its last max_entries: the viewer shows allocations made before the
// window as already there.
#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>

#include "analyzer/export/export_formats.h"
#include "analyzer/export/pickle_writer.h"
#include "analyzer/model/blocks/block_extents.h"
#include "analyzer/model/blocks/extents_by_device.h"
#include "analyzer/model/input/mapped_file.h"
#include "analyzer/model/input/trace_error.h"
#include "analyzer/report/frames/stack_frames.h"
#include "format/file_header.h"
#include "format/trace_reader.h"

namespace gmt::analyzer {
namespace {

constexpr std::size_t kEntriesKept = 100'000;

// PyTorch's caching allocator takes blocks up to 1 MiB from its small pool, in 2 MiB segments.
constexpr uint64_t kSmallSegment = 1 << 20;
constexpr uint64_t kSmallPoolSegment = 2 << 20;

bool shown(format::MemoryKind kind) {
  using format::MemoryKind;
  return kind == MemoryKind::kDevice || kind == MemoryKind::kPitched ||
         kind == MemoryKind::kStreamOrdered || kind == MemoryKind::kGraphMemory;
}

// Frees of handles, arrays and reservations name no device address.
bool frees_an_address(format::Api api) {
  using format::Api;
  return api != Api::kCuMemRelease && api != Api::kCuArrayDestroy &&
         api != Api::kCuMipmappedArrayDestroy && api != Api::kCuMemAddressFree;
}

enum class Action {
  kSegmentAlloc,
  kAlloc,
  kFreeRequested,
  kFreeCompleted,
  kSegmentFree,
  kSegmentMap,
  kSegmentUnmap,
  kOom
};

const char* action_name(Action a) {
  switch (a) {
    case Action::kSegmentAlloc:
      return "segment_alloc";
    case Action::kAlloc:
      return "alloc";
    case Action::kFreeRequested:
      return "free_requested";
    case Action::kFreeCompleted:
      return "free_completed";
    case Action::kSegmentFree:
      return "segment_free";
    case Action::kSegmentMap:
      return "segment_map";
    case Action::kSegmentUnmap:
      return "segment_unmap";
    case Action::kOom:
      return "oom";
  }
  return "?";
}

struct Entry {
  Action action;
  uint64_t addr;
  uint64_t size;
  uint32_t stack;
  uint64_t time_ns;
  uint64_t device_free = 0;  // oom: what the driver said was free, 0 when not known
  uint64_t stream = 0;
};

// A driver allocation live now.
struct LiveBlock {
  int device;
  uint64_t size;
  uint32_t stack;
  uint32_t context;
  bool allocator_segment = false;  // a caching allocator reported it as its segment
};

// A block a caching allocator handed out.
struct AllocatorBlock {
  uint64_t size;
  uint64_t requested;
  uint32_t stack;
  uint64_t stream;
  bool free_requested = false;  // freed by its user, streams pending
};

// A segment a caching allocator reported, with its blocks.
struct AllocatorSegment {
  int device;
  uint64_t size;
  uint32_t stack;
  uint64_t stream;
  std::map<uint64_t, AllocatorBlock> blocks;  // by address
};

// Replays the allocations with a device address, as the model does for them (replay.cpp): an
// address allocated again while live ends the earlier one, a context's destruction ends all of
// its allocations.
class MemvizReplay {
 public:
  explicit MemvizReplay(const TraceSummary& trace) : trace_(trace) {}

  void on(const format::AllocRecord& r) {
    if (!shown(r.kind) || r.device < 0) return;
    if (auto it = live_.find(r.address); it != live_.end()) end(it, r.time_ns);
    live_[r.address] = {r.device, r.size, r.stack, r.context};
    add(r.device, {Action::kSegmentAlloc, r.address, r.size, r.stack, r.time_ns});
    add(r.device, {Action::kAlloc, r.address, r.size, r.stack, r.time_ns});
  }
  void on(const format::FreeRecord& r) {
    if (!frees_an_address(r.api)) return;
    if (auto it = live_.find(r.address); it != live_.end()) end(it, r.time_ns);
  }
  void on(const format::ContextDestroyedRecord& r) {
    for (auto it = live_.begin(); it != live_.end();) {
      it = it->second.context == r.id ? end(it, r.time_ns) : std::next(it);
    }
  }
  void on(const format::BlockRecord& r);
  void on(const format::AllocatorSettingsRecord& r) { extents_.set(r); }
  void on(const format::AllocFailedRecord& r) {
    // The model keeps the failures in record order: the n-th is this one, with its views.
    const std::size_t n = failures_seen_++;
    if (!shown(r.kind) || r.device < 0) return;
    uint64_t device_free = 0;
    if (n < trace_.failures.size() && trace_.failures[n].views) {
      const ViewValues& v = *trace_.failures[n].views;
      if (v.driver_total_bytes && v.driver_used_bytes)
        device_free = *v.driver_total_bytes - *v.driver_used_bytes;
    }
    add(r.device, {Action::kOom, 0, r.size, r.stack, r.time_ns, device_free});
  }

  const std::map<int, std::deque<Entry>>& traces() const { return traces_; }
  // What is live now, by address: the snapshot's segments.
  std::map<uint64_t, LiveBlock> live() const { return {live_.begin(), live_.end()}; }
  // The caching allocators' segments live now, by address.
  const std::map<uint64_t, AllocatorSegment>& segments() const { return segments_; }

 private:
  using Live = std::unordered_map<uint64_t, LiveBlock>;
  Live::iterator end(Live::iterator it, uint64_t time_ns) {
    const LiveBlock& b = it->second;
    if (b.allocator_segment) {
      segments_.erase(it->first);
    } else {
      add(b.device, {Action::kFreeCompleted, it->first, b.size, b.stack, time_ns});
    }
    add(b.device, {Action::kSegmentFree, it->first, b.size, b.stack, time_ns});
    return live_.erase(it);
  }
  void segment_allocated(const format::BlockRecord& r);
  void segment_freed(const format::BlockRecord& r);
  // The blocks of the segment holding `address`, or loose_.
  std::map<uint64_t, AllocatorBlock>& blocks_holding(uint64_t address);
  AllocatorBlock* block_at(uint64_t address);
  uint64_t block_size(const format::BlockRecord& r);
  void add(int device, const Entry& e) {
    std::deque<Entry>& entries = traces_[device];
    entries.push_back(e);
    if (entries.size() > kEntriesKept) entries.pop_front();
  }

  const TraceSummary& trace_;
  Live live_;
  std::map<uint64_t, AllocatorSegment> segments_;
  std::map<uint64_t, AllocatorBlock> loose_;  // blocks outside any reported segment (expandable)
  ExtentsByDevice extents_;                   // PyTorch's
  std::map<int, std::deque<Entry>> traces_;
  std::size_t failures_seen_ = 0;
};

void MemvizReplay::on(const format::BlockRecord& r) {
  using format::BlockAction;
  if (BlockExtents::rebuilt(r.allocator) && r.action != static_cast<uint32_t>(BlockAction::kAlloc))
    extents_.at(r.allocator, r.device).follow(r);
  const auto entry = [&](Action action, uint64_t size) {
    add(r.device, {action, r.address, size, r.stack, r.time_ns, 0, r.stream});
  };
  switch (static_cast<BlockAction>(r.action)) {
    case BlockAction::kAlloc: {
      const uint64_t size = block_size(r);
      blocks_holding(r.address).insert_or_assign(r.address,
                                                 AllocatorBlock{size, r.size, r.stack, r.stream});
      return entry(Action::kAlloc, size);
    }
    case BlockAction::kFreeRequested:
      if (AllocatorBlock* b = block_at(r.address)) {
        b->free_requested = true;
        entry(Action::kFreeRequested, b->size);
      }
      return;
    case BlockAction::kFreeCompleted:
      if (AllocatorBlock* b = block_at(r.address)) {
        entry(Action::kFreeCompleted, b->size);
        blocks_holding(r.address).erase(r.address);
      }
      return;
    case BlockAction::kSegmentAlloc:
      return segment_allocated(r);
    case BlockAction::kSegmentFree:
      return segment_freed(r);
    case BlockAction::kSegmentMap:
      return entry(Action::kSegmentMap, r.size);
    case BlockAction::kSegmentUnmap:
      return entry(Action::kSegmentUnmap, r.size);
    case BlockAction::kOom:
      return;  // the driver's failed allocation is the "oom" entry
  }
}

// The driver allocation at its address becomes the segment: its one-block "alloc" entry goes
// (the allocator's blocks come as their own), and its free ends the segment.
void MemvizReplay::segment_allocated(const format::BlockRecord& r) {
  AllocatorSegment& segment = segments_[r.address];
  segment = AllocatorSegment{r.device, r.size, r.stack, r.stream, {}};
  const auto driver = live_.find(r.address);
  if (driver == live_.end() || driver->second.allocator_segment) {
    add(r.device, {Action::kSegmentAlloc, r.address, r.size, r.stack, r.time_ns, 0, r.stream});
    return;
  }
  driver->second.allocator_segment = true;
  if (segment.stack == 0) segment.stack = driver->second.stack;
  std::deque<Entry>& entries = traces_[driver->second.device];
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    if (it->action == Action::kAlloc && it->addr == r.address) {
      entries.erase(std::next(it).base());
      break;
    }
    if (it->action == Action::kSegmentAlloc && it->addr == r.address) break;
  }
}

// Given back: the driver's free (before or after this event) ends the segment once.
void MemvizReplay::segment_freed(const format::BlockRecord& r) {
  if (segments_.erase(r.address) == 0) return;
  live_.erase(r.address);
  add(r.device, {Action::kSegmentFree, r.address, r.size, r.stack, r.time_ns, 0, r.stream});
}

std::map<uint64_t, AllocatorBlock>& MemvizReplay::blocks_holding(uint64_t address) {
  const auto holder = segments_.upper_bound(address);
  if (holder == segments_.begin()) return loose_;
  AllocatorSegment& segment = std::prev(holder)->second;
  return address - std::prev(holder)->first < segment.size ? segment.blocks : loose_;
}

AllocatorBlock* MemvizReplay::block_at(uint64_t address) {
  std::map<uint64_t, AllocatorBlock>& blocks = blocks_holding(address);
  const auto it = blocks.find(address);
  return it != blocks.end() ? &it->second : nullptr;
}

// PyTorch's sizes asked for, rebuilt into its blocks'; the others' as reported.
uint64_t MemvizReplay::block_size(const format::BlockRecord& r) {
  if (!BlockExtents::rebuilt(r.allocator)) return r.size;
  return extents_.at(r.allocator, r.device)
      .allocate(r.address, r.size, [&](uint64_t address, uint64_t size) {
        if (AllocatorBlock* b = block_at(address)) b->size = size;
      });
}

// Writes each stack's frames once, then refers to them by memo slot.
class FrameLists {
 public:
  FrameLists(PickleWriter& pickle, ResolvedStacks& frames) : pickle_(pickle), frames_(frames) {}

  void write(uint32_t stack) {
    if (const auto it = memo_.find(stack); it != memo_.end()) return pickle_.get(it->second);
    const auto slot = static_cast<uint32_t>(memo_.size());
    memo_[stack] = slot;
    pickle_.begin_list();
    for (const SiteFrame& f : frames_[stack]) {
      pickle_.begin_dict();
      pickle_.string("filename");
      pickle_.string(f.file ? *f.file : f.module ? *f.module : "??");
      pickle_.string("line");
      pickle_.integer(static_cast<int64_t>(f.line.value_or(0)));
      pickle_.string("name");
      pickle_.string(f.function);
      pickle_.end_dict();
    }
    pickle_.end_list(slot);
  }

 private:
  PickleWriter& pickle_;
  ResolvedStacks& frames_;
  std::unordered_map<uint32_t, uint32_t> memo_;
};

void write_segment(PickleWriter& p, FrameLists& frames, uint64_t address, const LiveBlock& b) {
  p.begin_dict();
  const auto number = [&p](const char* key, uint64_t value) {
    p.string(key);
    p.integer(value);
  };
  p.string("device");
  p.integer(static_cast<int64_t>(b.device));
  number("address", address);
  number("total_size", b.size);
  number("allocated_size", b.size);
  number("active_size", b.size);
  number("requested_size", b.size);
  number("stream", 0);
  p.string("segment_type");
  p.string(b.size <= kSmallSegment ? "small" : "large");
  p.string("is_expandable");
  p.boolean(false);
  p.string("frames");
  frames.write(b.stack);
  p.string("blocks");
  p.begin_list();
  p.begin_dict();
  number("address", address);
  number("size", b.size);
  number("requested_size", b.size);
  p.string("state");
  p.string("active_allocated");
  p.string("frames");
  frames.write(b.stack);
  p.end_dict();
  p.end_list();
  p.end_dict();
}

// A caching allocator's segment: its blocks in address order, the free space between them as
// inactive blocks, as PyTorch's snapshot lists them.
void write_allocator_segment(PickleWriter& p, FrameLists& frames, uint64_t address,
                             const AllocatorSegment& s) {
  uint64_t allocated = 0;
  uint64_t active = 0;
  uint64_t requested = 0;
  for (const auto& [at, b] : s.blocks) {
    active += b.size;
    if (!b.free_requested) {
      allocated += b.size;
      requested += b.requested;
    }
  }
  const auto number = [&p](const char* key, uint64_t value) {
    p.string(key);
    p.integer(value);
  };
  p.begin_dict();
  p.string("device");
  p.integer(static_cast<int64_t>(s.device));
  number("address", address);
  number("total_size", s.size);
  number("allocated_size", allocated);
  number("active_size", active);
  number("requested_size", requested);
  number("stream", s.stream);
  p.string("segment_type");
  p.string(s.size <= kSmallPoolSegment ? "small" : "large");
  p.string("is_expandable");
  p.boolean(false);
  p.string("frames");
  frames.write(s.stack);
  p.string("blocks");
  p.begin_list();
  const auto inactive = [&](uint64_t at, uint64_t size) {
    p.begin_dict();
    number("address", at);
    number("size", size);
    number("requested_size", 0);
    p.string("state");
    p.string("inactive");
    p.string("frames");
    frames.write(0);
    p.end_dict();
  };
  const uint64_t end = address + s.size;
  uint64_t cursor = address;
  for (const auto& [at, b] : s.blocks) {
    if (at > cursor) inactive(cursor, at - cursor);
    p.begin_dict();
    number("address", at);
    number("size", b.size);
    number("requested_size", b.requested);
    p.string("state");
    p.string(b.free_requested ? "active_pending_free" : "active_allocated");
    p.string("frames");
    frames.write(b.stack);
    p.end_dict();
    cursor = std::max(cursor, at + b.size);
  }
  if (end > cursor) inactive(cursor, end - cursor);
  p.end_list();
  p.end_dict();
}

void write_entry(PickleWriter& p, FrameLists& frames, const Entry& e) {
  p.begin_dict();
  p.string("action");
  p.string(action_name(e.action));
  p.string("addr");
  p.integer(e.addr);
  p.string("size");
  p.integer(e.size);
  p.string("stream");
  p.integer(e.stream);
  p.string("time_us");
  p.integer(e.time_ns / 1000);
  if (e.action == Action::kOom) {
    p.string("device_free");
    p.integer(e.device_free);
  }
  p.string("frames");
  frames.write(e.stack);
  p.end_dict();
}

}  // namespace

void write_memviz(TraceSummary& trace, FrameMode mode, std::ostream& out) {
  MemvizReplay replay(trace);
  {
    MappedFile file(trace.path);
    const format::HeaderCheck header = format::check_header(file.bytes());
    if (!header.ok) throw TraceError(trace.path + ": " + header.error);
    format::TraceReader reader(file.bytes(), header.header, file.page_access());
    while (const std::optional<format::Record> record = reader.next()) {
      std::visit(
          [&replay](const auto& r) {
            if constexpr (requires { replay.on(r); }) replay.on(r);
          },
          *record);
    }
  }
  const std::map<uint64_t, LiveBlock> live = replay.live();
  const std::map<uint64_t, AllocatorSegment>& segments = replay.segments();
  std::vector<uint32_t> stacks{0};  // the inactive blocks'
  for (const auto& [address, b] : live) stacks.push_back(b.stack);
  for (const auto& [address, s] : segments) {
    stacks.push_back(s.stack);
    for (const auto& [at, b] : s.blocks) stacks.push_back(b.stack);
  }
  for (const auto& [device, entries] : replay.traces()) {
    for (const Entry& e : entries) stacks.push_back(e.stack);
  }
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  ResolvedStacks resolved = resolve_stacks(trace, stacks, trace.symbolization_warnings);
  for (auto& [id, f] : resolved) f = flame_frames(f, mode);

  PickleWriter p(out);
  FrameLists frames(p, resolved);
  p.begin_dict();
  p.string("segments");
  p.begin_list();
  // By device, then address, as PyTorch lists them.
  std::vector<std::pair<int, uint64_t>> order;
  for (const auto& [address, b] : live) {
    if (!b.allocator_segment) order.emplace_back(b.device, address);
  }
  for (const auto& [address, s] : segments) order.emplace_back(s.device, address);
  std::sort(order.begin(), order.end());
  for (const auto& [device, address] : order) {
    if (const auto s = segments.find(address); s != segments.end()) {
      write_allocator_segment(p, frames, address, s->second);
    } else {
      write_segment(p, frames, address, live.at(address));
    }
  }
  p.end_list();
  // One list per ordinal from 0 up to the highest with any entry, as PyTorch's has one per device.
  p.string("device_traces");
  p.begin_list();
  int devices = 0;
  for (const auto& [device, entries] : replay.traces()) devices = std::max(devices, device + 1);
  for (const auto& [device, address] : order) devices = std::max(devices, device + 1);
  for (int d = 0; d < devices; ++d) {
    p.begin_list();
    if (const auto it = replay.traces().find(d); it != replay.traces().end()) {
      for (const Entry& e : it->second) write_entry(p, frames, e);
    }
    p.end_list();
  }
  p.end_list();
  p.end_dict();
  p.finish();
}

}  // namespace gmt::analyzer
