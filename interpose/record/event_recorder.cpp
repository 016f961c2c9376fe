// SPDX-License-Identifier: Apache-2.0
#include "interpose/record/event_recorder.h"

#include <algorithm>

#include "format/hot_path.h"
#include "interpose/common/thread_id.h"
#include "interpose/record/public_api_scope.h"

namespace gmt::interpose {

// Contexts are few (one per device, plus any the program creates), so a vector searched
// linearly beats a map. The lock is held while the ContextRecord is written: no allocation can
// name an id before the record that defines it is in the file.
namespace {

// The last context this thread named, so that the common case (every allocation in the same
// context) takes no lock. Valid while the recorder's epoch is the one it was taken in: the epoch
// moves whenever a context is forgotten (destroyed) or the process forks.
struct LastContext {
  uint64_t handle = 0;
  uint32_t id = 0;
  uint64_t epoch = 0;
};
thread_local LastContext last_context __attribute__((tls_model("initial-exec")));

}  // namespace

uint32_t EventRecorder::context_id(uint64_t context, int device) {
  if (context == 0) return 0;
  const uint64_t epoch = contexts_epoch_.load(std::memory_order_acquire);
  if (last_context.handle == context && last_context.epoch == epoch) return last_context.id;
  const uint32_t id = context_id_locked(context, device);
  last_context = {context, id, epoch};
  return id;
}

uint32_t EventRecorder::context_id_locked(uint64_t context, int device) {
  std::lock_guard<std::mutex> lock(contexts_mutex_);
  for (const KnownContext& known : contexts_) {
    if (known.handle == context) return known.id;
  }
  format::ContextRecord rec;
  rec.id = next_context_id_++;
  rec.handle = context;
  rec.device = device;
  writer_.record(rec);
  contexts_.push_back({context, rec.id});
  sampler_.device_in_use(device);
  return rec.id;
}

GMT_HOT_PATH uint32_t EventRecorder::stack(CostScope& cost) {
  // Without stacks there is nothing to take, and nothing to time: the self-time note counts the
  // stacks taken, and four clock reads in each.
  if (config_.stacks == StackMode::kNone) return 0;
  return cost.stack([&](StackCost* parts) { return stack_here(parts); });
}

GMT_HOT_PATH uint32_t EventRecorder::stack_here(StackCost* cost) {
  const StackMode mode = config_.stacks;
  uint64_t frames[2 * format::StackRecord::kMaxFrames];
  const int depth = config_.stack_depth;
  // Python frames first: in `all`, only a stack that has them may end its native frames at the
  // interpreter, where they stand for the rest.
  uint64_t* python_frames = frames + format::StackRecord::kMaxFrames;
  const bool timed = __builtin_expect(cost != nullptr, 0);
  const uint64_t python_start = timed ? RecorderCost::now() : 0;
  const int python = mode == StackMode::kNative ? 0 : python_.capture(python_frames, depth);
  if (timed) [[unlikely]]
    cost->python_ns += RecorderCost::now() - python_start;
  int native = 0;
  const NativeStack::Counts before = timed ? native_.counts() : NativeStack::Counts{};
  if (mode == StackMode::kAll && python > 0) {
    native = native_.capture_to_interpreter(frames, depth);
  } else if (mode != StackMode::kPython) {
    native = native_.capture(frames, depth);
  }
  if (timed) [[unlikely]] {
    const NativeStack::Counts after = native_.counts();
    cost->native_frames += static_cast<uint64_t>(native);
    cost->native_remembered += after.remembered - before.remembered;
    cost->native_by_libunwind += after.by_libunwind - before.by_libunwind;
  }
  // Behind the native frames; already there when they took every slot before the Python ones
  // (copying a range onto itself is not allowed).
  if (frames + native != python_frames)
    std::copy(python_frames, python_frames + python, frames + native);
  return stacks_.intern(frames, native, python, [&] { modules_.cover(frames, native); });
}

GMT_HOT_PATH void EventRecorder::allocation(uint32_t error, int device, uint64_t context,
                                            format::MemoryKind kind, format::Api api,
                                            uint64_t address, uint64_t size) {
  CostScope cost(cost_);
  if (error != 0) {
    format::AllocFailedRecord rec;
    rec.thread = thread_id();
    rec.device = device;
    rec.kind = kind;
    rec.api = api;
    rec.public_api = PublicApiScope::current();
    rec.size = size;
    rec.error = error;
    rec.stack = stack(cost);
    phases_.flush_if_pending();
    writer_.record(rec);
    after_allocation(error, device, kind, 0, size, 0);
    return;
  }
  format::AllocRecord rec;
  rec.thread = thread_id();
  rec.device = device;
  rec.kind = kind;
  rec.api = api;
  rec.public_api = PublicApiScope::current();
  rec.address = address;
  rec.size = size;
  rec.context = context_id(context, device);
  rec.stack = stack(cost);
  // Phases opened before the trace existed go first: the context record above started it.
  phases_.flush_if_pending();
  writer_.record(rec);
  after_allocation(0, device, kind, address, size, rec.context);
}

GMT_HOT_PATH void EventRecorder::after_allocation(uint32_t error, int device,
                                                  format::MemoryKind kind, uint64_t address,
                                                  uint64_t size, uint32_t context) {
  phases_.flush_if_pending();
  if (config_.sample_ms == 0) return;
  if (error != 0) {
    sampler_.sample_now(format::SampleReason::kFailedAlloc);
    return;
  }
  if (kind == format::MemoryKind::kStreamOrdered) sampler_.uses_pools(device);
  if (kind == format::MemoryKind::kGraphMemory) sampler_.uses_graphs(device);
  if (high_water_.allocated(device, kind, address, size, context)) {
    sampler_.sample_now(format::SampleReason::kHighWater);
  }
}

GMT_HOT_PATH void EventRecorder::freeing(format::Api api, uint64_t address) {
  CostScope cost(cost_);
  format::FreeRecord rec;
  rec.thread = thread_id();
  rec.api = api;
  rec.public_api = PublicApiScope::current();
  rec.address = address;
  writer_.record(rec);
  if (config_.sample_ms != 0) high_water_.freeing(api, address);
}

void EventRecorder::mapped(int device, uint64_t address, uint64_t size, uint64_t offset,
                           uint64_t handle) {
  format::MapRecord rec;
  rec.thread = thread_id();
  rec.device = device;
  rec.address = address;
  rec.size = size;
  rec.offset = offset;
  rec.handle = handle;
  writer_.record(rec);
}

void EventRecorder::unmapping(uint64_t address, uint64_t size) {
  format::UnmapRecord rec;
  rec.thread = thread_id();
  rec.address = address;
  rec.size = size;
  writer_.record(rec);
}

void EventRecorder::handle_retained(uint64_t handle) {
  format::RetainHandleRecord rec;
  rec.thread = thread_id();
  rec.handle = handle;
  writer_.record(rec);
}

void EventRecorder::pool_event(format::Api api, int device, uint64_t pool, uint64_t bytes) {
  format::PoolRecord rec;
  rec.thread = thread_id();
  rec.device = device;
  rec.api = api;
  rec.public_api = PublicApiScope::current();
  rec.pool = pool;
  rec.bytes = bytes;
  writer_.record(rec);
  if (device >= 0) sampler_.uses_pools(device);
}

namespace {

// Whether a block action starts something, and so gets the calling thread's stack.
bool block_action_has_stack(uint32_t action) {
  switch (static_cast<format::BlockAction>(action)) {
    case format::BlockAction::kAlloc:
    case format::BlockAction::kSegmentAlloc:
    case format::BlockAction::kSegmentMap:
    case format::BlockAction::kOom:
      return true;
    default:
      return false;
  }
}

}  // namespace

GMT_HOT_PATH void EventRecorder::block(uint32_t allocator, uint32_t action, int device,
                                       uint64_t address, uint64_t size, uint64_t stream) {
  CostScope cost(cost_);
  format::BlockRecord rec;
  rec.thread = thread_id();
  rec.allocator = allocator;
  rec.action = action;
  rec.device = device;
  rec.address = address;
  rec.size = size;
  rec.stream = stream;
  rec.stack = block_action_has_stack(action) ? stack(cost) : 0;
  // Phases opened before the trace existed go first, as for an allocation (the record may be
  // the one that creates the trace, which they then follow).
  phases_.flush_if_pending();
  writer_.record(rec);
  phases_.flush_if_pending();
}

void EventRecorder::finish() {
  if (!cost_.on() || !writer_.started()) return;
  format::NoteRecord note;
  note.text = cost_.note();
  writer_.record(note);
}

void EventRecorder::context_destroying(uint64_t context, format::Api api) {
  uint32_t id = 0;
  {
    std::lock_guard<std::mutex> lock(contexts_mutex_);
    for (auto it = contexts_.begin(); it != contexts_.end(); ++it) {
      if (it->handle == context) {
        id = it->id;
        contexts_.erase(it);  // a new context may get the same handle: it gets a new id
        contexts_epoch_.fetch_add(1, std::memory_order_release);
        break;
      }
    }
  }
  if (id == 0) return;  // nothing was ever allocated in it
  format::ContextDestroyedRecord rec;
  rec.thread = thread_id();
  rec.id = id;
  rec.api = api;
  rec.public_api = PublicApiScope::current();
  writer_.record(rec);
  high_water_.context_gone(id);
}

void EventRecorder::before_fork() {
  contexts_mutex_.lock();
  high_water_.before_fork();
  python_.before_fork();
  stacks_.before_fork();
  modules_.before_fork();
}

void EventRecorder::after_fork_in_parent() {
  modules_.after_fork_in_parent();
  stacks_.after_fork_in_parent();
  python_.after_fork_in_parent();
  high_water_.after_fork_in_parent();
  contexts_mutex_.unlock();
}

void EventRecorder::after_fork_in_child() {
  modules_.after_fork_in_child();
  stacks_.after_fork_in_child();
  python_.after_fork_in_child();
  high_water_.after_fork_in_child();
  contexts_.clear();
  next_context_id_ = 1;
  cost_.clear();
  contexts_epoch_.fetch_add(1, std::memory_order_release);
  contexts_mutex_.unlock();
}

}  // namespace gmt::interpose
