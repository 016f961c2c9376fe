// Turns what a hook saw into trace records. Knows nothing of CUDA's types: the hooks translate.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "format/records.h"
#include "interpose/record/trace_writer.h"

namespace gmt::interpose {

class EventRecorder {
 public:
  explicit EventRecorder(TraceWriter& writer) : writer_(writer) {}

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

  // Before a context goes, with everything it still owns.
  void context_destroying(uint64_t context, format::Api api);

  // fork(): the child's trace starts afresh, with no context known.
  void after_fork_in_child();

 private:
  // The id allocations use for `context`, writing its ContextRecord the first time it is seen.
  uint32_t context_id(uint64_t context, int device);

  struct KnownContext {
    uint64_t handle;
    uint32_t id;
  };

  TraceWriter& writer_;
  std::mutex contexts_mutex_;
  std::vector<KnownContext> contexts_;
  uint32_t next_context_id_ = 1;
};

}  // namespace gmt::interpose
