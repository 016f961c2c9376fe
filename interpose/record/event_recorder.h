// SPDX-License-Identifier: Apache-2.0
// Turns what a hook saw into trace records. Knows nothing of CUDA's types: the hooks translate.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "format/records.h"
#include "interpose/config.h"
#include "interpose/record/phase_recorder.h"
#include "interpose/record/recorder_cost.h"
#include "interpose/record/trace_writer.h"
#include "interpose/sampler/device_high_water.h"
#include "interpose/sampler/sampler.h"
#include "interpose/stacks/module_table.h"
#include "interpose/stacks/native_stack.h"
#include "interpose/stacks/python_stack.h"
#include "interpose/stacks/stack_table.h"

namespace gmt::interpose {

class EventRecorder {
 public:
  EventRecorder(TraceWriter& writer, const Config& config, Sampler& sampler, PhaseRecorder& phases)
      : writer_(writer),
        config_(config),
        sampler_(sampler),
        phases_(phases),
        native_(config.libunwind_only),
        python_(writer, config.test_python_api),
        modules_(writer),
        stacks_(writer),
        cost_(config.self_time) {}

  // After the real allocation returned: a success with its address, or the failure with the
  // size that was asked for. `error` is the CUresult (0 = success); `context` the handle of the
  // context that owns the allocation, 0 for none.
  void allocation(uint32_t error, int device, uint64_t context, format::MemoryKind kind,
                  format::Api api, uint64_t address, uint64_t size);

  // Before the real free runs.
  void freeing(format::Api api, uint64_t address);

  // VMM: after a successful cuMemMap; before cuMemUnmap; after cuMemRetainAllocationHandle.
  void mapped(int device, uint64_t address, uint64_t size, uint64_t offset, uint64_t handle);
  void unmapping(uint64_t address, uint64_t size);
  void handle_retained(uint64_t handle);

  // Stream-ordered pools: after a create or a trim, before a destroy.
  void pool_event(format::Api api, int device, uint64_t pool, uint64_t bytes);

  // A library was unloaded (dlclose): native stacks forget what they learnt of its code.
  void modules_unloaded() { native_.modules_unloaded(); }

  // A caching allocator's block event (gpumemtrace_framework_block), on the thread that made it:
  // with that thread's stack for the events that start something (alloc, segment alloc and map,
  // OOM), without one for the others (a free's stack says nothing the alloc's did not).
  void block(uint32_t allocator, uint32_t action, int device, uint64_t address, uint64_t size,
             uint64_t stream);

  // At a normal exit, before the trace's end: the note of what recording cost, when asked for.
  void finish();

  // Before a context goes, with everything it still owns.
  void context_destroying(uint64_t context, format::Api api);

  // fork(): every lock is taken before, so that the child finds the tables consistent; the
  // child's trace starts afresh, with no context, module or stack known.
  void before_fork();
  void after_fork_in_parent();
  void after_fork_in_child();

 private:
  // The id allocations use for `context`, writing its ContextRecord the first time it is seen.
  uint32_t context_id(uint64_t context, int device);
  uint32_t context_id_locked(uint64_t context, int device);
  // The id of the calling thread's stack, as configured (0 when stacks are off), timed apart by
  // `cost`.
  uint32_t stack(CostScope& cost);
  // stack()'s work once stacks are on: what its parts cost is counted in `cost` unless null.
  uint32_t stack_here(StackCost* cost);

  struct KnownContext {
    uint64_t handle;
    uint32_t id;
  };

  // What follows every record of a hook: phases held back before the trace existed, and a
  // sample when the allocation was a new high or a failure.
  void after_allocation(uint32_t error, int device, format::MemoryKind kind, uint64_t address,
                        uint64_t size, uint32_t context);

  TraceWriter& writer_;
  const Config& config_;
  Sampler& sampler_;
  PhaseRecorder& phases_;
  DeviceHighWater high_water_;
  NativeStack native_;
  PythonStack python_;
  ModuleTable modules_;
  StackTable stacks_;
  std::mutex contexts_mutex_;
  std::vector<KnownContext> contexts_;
  uint32_t next_context_id_ = 1;
  std::atomic<uint64_t> contexts_epoch_{1};
  RecorderCost cost_;
};

}  // namespace gmt::interpose
